//! `retry QUEUE --state failed|completed`: finished jobs back to waiting, in bounded batches.
//!
//! Only jobs finished before the command started are retried, so a job that fails again
//! while it runs is left for the next run; and a retried job has left the state, so running
//! the command again (after ctrl-c) never retries a job twice.

use bullmq::backend::{Admin as _, Lifecycle as _};

use super::bulk::{Action, Bulk, Plan, Step};
use crate::cli::Finished;
use crate::fail::Failure;

pub(super) async fn run(on: &Bulk<'_>, state: Finished) -> Result<(), Failure> {
    let finished = state.state();
    let states = [finished.into()];
    let (queue, matched) = on.open(&states).await?;
    let plan = Plan {
        action: Action::Retry,
        state: Some(finished.as_str()),
        noun: format!("{} jobs", finished.as_str()),
    };
    let before = queue.backend().clock().now_ms();
    let failed_type = [bullmq::job::JobType::State(finished.into())];
    let left = || queue.get_job_count_by_types(&failed_type);
    plan.run(
        on,
        matched,
        || async {
            let batch = queue
                .backend()
                .retry_finished_jobs(finished, on.args.batch, before)
                .await?;
            Step::after(batch, matched, &left).await
        },
        || async { Ok(matched.saturating_sub(left().await?)) },
    )
    .await
}
