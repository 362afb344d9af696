//! `drain QUEUE [--delayed]`: remove every waiting (and prioritized) job, and delayed ones
//! with `--delayed`. Upstream's drain is one server call (one script, one SQL command); the
//! count, the dry run and the question are as for every bulk command.

use bullmq::JobState;
use bullmq::backend::Admin as _;

use super::bulk::{Plan, Step, count};
use crate::cli::BulkArgs;
use crate::context::Ctx;
use crate::fail::Failure;

pub(super) async fn run(
    ctx: &Ctx,
    queue_name: &str,
    delayed: bool,
    bulk: &BulkArgs,
) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let mut states = vec![JobState::Waiting, JobState::Prioritized];
    if delayed {
        states.push(JobState::Delayed);
    }
    let matched = count(ctx, &queue, &states).await?;
    let plan = Plan {
        command: "drain",
        queue: queue_name,
        state: None,
        verb: "remove",
        done_verb: "removed",
        noun: if delayed {
            "waiting and delayed jobs".to_owned()
        } else {
            "waiting jobs".to_owned()
        },
    };
    if bulk.dry_run {
        return plan.dry_run(ctx, matched);
    }
    let states = &states;
    plan.run(
        ctx,
        bulk,
        matched,
        || async {
            queue.backend().drain(delayed).await?;
            let left = queue
                .get_job_count_by_types(
                    &states
                        .iter()
                        .copied()
                        .map(bullmq::job::JobType::State)
                        .collect::<Vec<_>>(),
                )
                .await?;
            Ok(Step {
                done: Some(matched.saturating_sub(left)),
                more: false,
            })
        },
        // Every step counts: never called.
        || async { Ok(0) },
    )
    .await
}
