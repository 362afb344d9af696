//! `Blocking`: a worker's wait for work.

use std::time::Duration;

use bullmq_core::JobOptions;
use bullmq_core::backend::Blocking;

use super::Sec;
use crate::store::Store;

/// A liveness bound for waits that must return (not a timing assertion).
const BOUND: Duration = Duration::from_secs(10);

pub async fn a_wait_times_out_empty_and_zero_is_not_forever<S: Store>() {
    let s = Sec::<S>::new().await;
    // A name no other test uses: PostgreSQL notifies by queue name across schemas, so a
    // parallel test's queue `q` would wake this wait (harmless for a worker, which fetches
    // and finds nothing, but not the empty answer this test asks for).
    let b = s
        .sibling(&crate::support::unique_name("wait"))
        .await
        .backend()
        .clone();
    let none = tokio::time::timeout(BOUND, b.wait_for_job(Duration::from_millis(20)))
        .await
        .expect("the wait ends")
        .unwrap();
    assert_eq!(none, None);
    let none = tokio::time::timeout(BOUND, b.wait_for_job(Duration::ZERO))
        .await
        .expect("a zero wait is not a wait forever")
        .unwrap();
    assert_eq!(none, None);
}

pub async fn adding_a_job_wakes_a_waiting_worker<S: Store>() {
    let s = Sec::<S>::new().await;
    let waiting = tokio::spawn({
        let b = s.b.clone();
        async move { b.wait_for_job(Duration::from_secs(30)).await }
    });
    s.add("a", JobOptions::new()).await;
    let woke = tokio::time::timeout(BOUND, waiting)
        .await
        .expect("the new job ends the wait")
        .unwrap()
        .unwrap();
    assert!(woke.is_some(), "a marker for the new job");
}
