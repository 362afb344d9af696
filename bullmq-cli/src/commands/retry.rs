//! `retry QUEUE --state failed|completed`: finished jobs back to waiting, in bounded batches.
//!
//! Only jobs finished before the command started are retried, so a job that fails again
//! while it runs is left for the next run; and a retried job has left the state, so running
//! the command again (after ctrl-c) never retries a job twice.

use bullmq::backend::{Admin as _, Lifecycle as _};

use super::bulk::{Plan, Step, count};
use crate::cli::{BulkArgs, Finished};
use crate::context::Ctx;
use crate::fail::Failure;

pub(super) async fn run(
    ctx: &Ctx,
    queue_name: &str,
    state: Finished,
    bulk: &BulkArgs,
) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let finished = state.state();
    let states = [finished.into()];
    let matched = count(ctx, &queue, &states).await?;
    let plan = Plan {
        command: "retry",
        queue: queue_name,
        state: Some(finished.as_str()),
        verb: "retry",
        done_verb: "retried",
        noun: format!("{} jobs", finished.as_str()),
    };
    if bulk.dry_run {
        return plan.dry_run(ctx, matched);
    }
    let before = queue.backend().clock().now_ms();
    let failed_type = [bullmq::job::JobType::State(finished.into())];
    let left = || queue.get_job_count_by_types(&failed_type);
    plan.run(
        ctx,
        bulk,
        matched,
        || async {
            let batch = queue
                .backend()
                .retry_finished_jobs(finished, bulk.batch, before)
                .await?;
            Step::after(batch, matched, &left).await
        },
        || async { Ok(matched.saturating_sub(left().await?)) },
    )
    .await
}
