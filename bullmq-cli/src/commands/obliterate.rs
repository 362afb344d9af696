//! `obliterate QUEUE`: pause the queue, then remove it and every job in it, in bounded
//! batches. Refused while jobs are active unless `--force`.

use bullmq::backend::{Admin as _, Batch, ObliterateArgs};

use super::bulk::{Action, Bulk, Plan, Step};
use crate::fail::Failure;

pub(super) async fn run(on: &Bulk<'_>, force: bool) -> Result<(), Failure> {
    let (queue, matched) = on.open(&bullmq::JobState::ALL).await?;
    let plan = Plan {
        action: Action::Obliterate,
        state: None,
        noun: "jobs".to_owned(),
    };
    let mut paused = false;
    plan.run(
        on,
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
                    count: on.args.batch,
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
