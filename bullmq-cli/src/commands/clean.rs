//! `clean QUEUE --state S --grace SECS`: remove a state's jobs older than the grace period,
//! in bounded batches.

use std::sync::atomic::{AtomicU64, Ordering};

use bullmq::JobState;
use bullmq::backend::{Admin as _, Lifecycle as _};

use super::bulk::{Action, Bulk, Plan, Step};
use crate::fail::Failure;

pub(super) async fn run(
    on: &Bulk<'_>,
    state: JobState,
    grace: u64,
    limit: Option<u64>,
) -> Result<(), Failure> {
    let (queue, in_state) = on.open(&[state]).await?;
    // Jobs within the grace period are counted too: the count is an upper bound.
    let matched = limit.map_or(in_state, |l| l.min(in_state));
    let plan = Plan {
        action: Action::Clean,
        state: Some(state.as_str()),
        noun: format!("{} jobs older than {grace} s", state.as_str()),
    };
    let before = queue
        .backend()
        .clock()
        .now_ms()
        .saturating_sub(grace.saturating_mul(1000));
    let max = limit.unwrap_or(u64::MAX);
    let removed = AtomicU64::new(0);
    plan.run(
        on,
        matched,
        || async {
            let so_far = removed.load(Ordering::SeqCst);
            let want = u64::from(on.args.batch).min(max - so_far);
            let asked = u32::try_from(want).unwrap_or(on.args.batch);
            let ids = queue
                .backend()
                .clean_jobs_by_state(state, before, asked)
                .await?;
            let got = u64::try_from(ids.len()).unwrap_or(u64::MAX);
            let total = so_far + got;
            removed.store(total, Ordering::SeqCst);
            Ok(Step {
                done: Some(total),
                more: got >= want && total < max,
            })
        },
        // Every step counts: never called.
        || async { Ok(0) },
    )
    .await
}
