//! `promote QUEUE`: every delayed job ready now, in bounded batches.

use bullmq::JobState;
use bullmq::backend::Admin as _;

use super::bulk::{Plan, Step, count};
use crate::cli::BulkArgs;
use crate::context::Ctx;
use crate::fail::Failure;

pub(super) async fn run(ctx: &Ctx, queue_name: &str, bulk: &BulkArgs) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let matched = count(ctx, &queue, &[JobState::Delayed]).await?;
    let plan = Plan {
        command: "promote",
        queue: queue_name,
        state: Some("delayed"),
        verb: "promote",
        done_verb: "promoted",
        noun: "delayed jobs".to_owned(),
    };
    if bulk.dry_run {
        return plan.dry_run(ctx, matched);
    }
    let delayed = [bullmq::job::JobType::State(JobState::Delayed)];
    let left = || queue.get_job_count_by_types(&delayed);
    plan.run(
        ctx,
        bulk,
        matched,
        || async {
            let batch = queue.backend().promote_jobs(bulk.batch).await?;
            Step::after(batch, matched, &left).await
        },
        || async { Ok(matched.saturating_sub(left().await?)) },
    )
    .await
}
