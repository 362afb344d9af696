//! `obliterate QUEUE`: pause the queue, then remove it and every job in it, in bounded
//! batches. Refused while jobs are active unless `--force`.

use bullmq::backend::{Admin as _, Batch, ObliterateArgs};

use super::bulk::{Plan, Step, count};
use crate::cli::BulkArgs;
use crate::context::Ctx;
use crate::fail::Failure;

pub(super) async fn run(
    ctx: &Ctx,
    queue_name: &str,
    force: bool,
    bulk: &BulkArgs,
) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let matched = count(ctx, &queue, &bullmq::JobState::ALL).await?;
    let plan = Plan {
        command: "obliterate",
        queue: queue_name,
        state: None,
        verb: "destroy the queue and its",
        done_verb: "removed",
        noun: "jobs".to_owned(),
    };
    if bulk.dry_run {
        return plan.dry_run(ctx, matched);
    }
    let mut paused = false;
    plan.run(
        ctx,
        bulk,
        matched,
        || {
            let first = !paused;
            paused = true;
            let queue = &queue;
            async move {
                if first {
                    queue.pause().await?;
                }
                let args = ObliterateArgs {
                    force,
                    count: bulk.batch,
                };
                let batch = queue
                    .backend()
                    .obliterate(args)
                    .await?
                    .map_err(bullmq::Error::from)?;
                let left = queue
                    .get_job_count_by_types(&bullmq::JobState::ALL.map(bullmq::job::JobType::State))
                    .await?;
                Ok(Step {
                    done: Some(matched.saturating_sub(left)),
                    more: batch == Batch::More,
                })
            }
        },
        // Every step counts: never called.
        || async { Ok(0) },
    )
    .await
}
