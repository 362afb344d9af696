//! `promote QUEUE`: every delayed job ready now, in bounded batches.

use bullmq::JobState;
use bullmq::backend::Admin as _;

use super::bulk::{Action, Bulk, Plan, Step};
use crate::fail::Failure;

pub(super) async fn run(on: &Bulk<'_>) -> Result<(), Failure> {
    let (queue, matched) = on.open(&[JobState::Delayed]).await?;
    let plan = Plan {
        action: Action::Promote,
        state: Some("delayed"),
        noun: "delayed jobs".to_owned(),
    };
    let delayed = [bullmq::job::JobType::State(JobState::Delayed)];
    let left = || queue.get_job_count_by_types(&delayed);
    plan.run(
        on,
        matched,
        || async {
            let batch = queue.backend().promote_jobs(on.args.batch).await?;
            Step::after(batch, matched, &left).await
        },
        || async { Ok(matched.saturating_sub(left().await?)) },
    )
    .await
}
