//! Jobs taken straight through a backend, as a worker's fetch would take them: what the lock
//! and stalled-check cases start from.

use std::time::Duration;

use bullmq_core::backend::{Backend, FetchParams, LockToken, NextJob, RateLimiter};
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

/// `fetch` with a worker rate limit of one job per [`LIMIT_WINDOW`]: the second such fetch is
/// held back.
pub fn one_per_window(fetch: FetchParams) -> FetchParams {
    FetchParams {
        limiter: Some(RateLimiter {
            max: 1,
            duration: LIMIT_WINDOW,
        }),
        ..fetch
    }
}

/// The window of [`one_per_window`]'s rate limit.
pub const LIMIT_WINDOW: Duration = Duration::from_secs(10);

/// Asserts that a rate limit of [`one_per_window`] held `next` back: no job, and a wait of
/// more than nothing and at most the window.
pub fn assert_held_back(next: &NextJob) {
    assert!(next.job.is_none(), "a held-back fetch takes no job");
    let ttl = next.rate_limit_ttl.expect("rate limited");
    assert!(ttl > Duration::ZERO && ttl <= LIMIT_WINDOW, "{ttl:?}");
}
