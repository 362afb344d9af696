//! The bound of clock skew on PostgreSQL (RELIABILITY R18): a lock is a time
//! (`locked_until_ms`, the holder's clock plus the lock duration) that the stalled check
//! compares with its own clock, so a checker whose clock runs ahead of the holder's by more
//! than what is left of the lock takes a healthy job back. On Redis the lock is a key that
//! expires by the server's clock, and no client clock moves it (`tests/conformance`,
//! `divergent::a_checker_ahead_by_more_than_the_lock_takes_nothing`).

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bullmq::backend::{StalledCheck, Transitions};
use bullmq::clock::ManualClock;
use bullmq::{JobState, Queue, QueueName};

use crate::support::held::add_and_hold;
use crate::support::postgres::SchemaGuard;

const LOCK: Duration = Duration::from_secs(30);

/// The stalled check at `ahead_ms` past the holder's clock, twice (a job is taken back on
/// the pass after the one that marks it): the ids it took back.
async fn check_at(schema: &SchemaGuard, start: u64, ahead_ms: u64) -> Vec<bullmq::JobId> {
    let name = "skew";
    let holder_clock = ManualClock::new(start);
    let holder = Queue::try_new(
        QueueName::new(name).unwrap(),
        schema.backend(name).await.with_clock(holder_clock),
    )
    .expect("the backend is bound to this queue");
    add_and_hold(&holder, "a", "holder", LOCK).await;
    let clock = ManualClock::new(start + ahead_ms);
    let checker = schema.backend(name).await.with_clock(clock.clone());
    let check = StalledCheck {
        max_stalled_count: 1,
        stalled_interval: Duration::from_millis(1),
    };
    let mut back = Vec::new();
    for _ in 0..2 {
        clock.advance(Duration::from_millis(10));
        back.extend(checker.move_stalled_jobs_to_wait(&check).await.unwrap());
    }
    back
}

#[tokio::test]
async fn a_checker_ahead_by_more_than_the_lock_takes_a_held_job_back() {
    let start = 1_800_000_000_000;
    // One second short of the lock's end at the holder's clock: nothing.
    let schema = SchemaGuard::new("skew_short");
    assert!(check_at(&schema, start, 29_000).await.is_empty());
    // One second past it: the job, held and healthy, goes back to wait.
    let schema = SchemaGuard::new("skew_long");
    let back = check_at(&schema, start, 31_000).await;
    assert_eq!(back.len(), 1, "{back:?}");
    let queue = schema.queue("skew").await;
    assert_eq!(
        queue.get_job_state(&back[0]).await.unwrap(),
        Some(JobState::Waiting)
    );
}
