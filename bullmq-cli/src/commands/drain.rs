//! `drain QUEUE [--delayed]`: remove every waiting (and prioritized) job, and delayed ones
//! with `--delayed`. Upstream's drain is one server call (one script, one SQL command); the
//! count, the dry run and the question are as for every bulk command.

use bullmq::JobState;
use bullmq::backend::Admin as _;

use super::bulk::{Action, Bulk, Plan, Step};
use crate::fail::Failure;

pub(super) async fn run(on: &Bulk<'_>, delayed: bool) -> Result<(), Failure> {
    let mut states = vec![JobState::Waiting, JobState::Prioritized];
    if delayed {
        states.push(JobState::Delayed);
    }
    let (queue, matched) = on.open(&states).await?;
    let plan = Plan {
        action: Action::Drain,
        state: None,
        noun: if delayed {
            "waiting and delayed jobs".to_owned()
        } else {
            "waiting jobs".to_owned()
        },
    };
    let states = &states;
    plan.run(
        on,
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
