//! Jobs taken straight through a backend, as a worker's fetch would take them: what the lock
//! and stalled-check cases start from.

use std::time::Duration;

use bullmq_core::backend::{Backend, FetchParams, LockToken};
use bullmq_core::{JobId, JobOptions, Queue};
use serde_json::json;

/// Adds a job named `name` on `queue` and takes it on the queue's own backend (at its clock)
/// with token `token`, locked for `lock`; its id. The job taken must be the one added.
pub async fn add_and_hold<B: Backend>(
    queue: &Queue<B>,
    name: &str,
    token: &str,
    lock: Duration,
) -> JobId {
    let added = queue
        .add(name, &json!({}), JobOptions::new())
        .await
        .unwrap()
        .id;
    let fetch = fetch_params(token, lock, None);
    let next = queue.backend().move_to_active(&fetch).await.unwrap();
    assert_eq!(next.job.expect("a job is ready").id, added);
    added
}

/// A fetch with `token`, locking for `lock`, with no rate limiter, by the worker named
/// `worker` (if any).
pub fn fetch_params(token: &str, lock: Duration, worker: Option<&str>) -> FetchParams {
    FetchParams {
        token: LockToken::new(token),
        lock_duration: lock,
        limiter: None,
        worker_name: worker.map(str::to_owned),
    }
}
