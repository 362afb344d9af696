//! Waiting in tests for a condition instead of for a fixed time: polled against the store, or
//! a worker's next event; each within a limit that fails the test naming what was awaited.

use std::future::Future;
use std::time::Duration;

/// Polls `check` every 20 ms until it holds; panics naming `what` after `limit`.
pub async fn eventually<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        // A poll interval, not a wait for time to pass.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next event of `rx` that `matches`, within `limit` (events it lagged behind are
/// skipped); panics naming `what` when the limit passes or the stream ends.
pub async fn next_event<E: Clone>(
    rx: &mut tokio::sync::broadcast::Receiver<E>,
    what: &str,
    limit: Duration,
    matches: impl Fn(&E) -> bool,
) -> E {
    use tokio::sync::broadcast::error::RecvError;
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Ok(e)) if matches(&e) => return e,
            Ok(Ok(_) | Err(RecvError::Lagged(_))) => {}
            Ok(Err(RecvError::Closed)) => panic!("events ended waiting for {what}"),
            Err(_) => panic!("timed out after {limit:?} waiting for {what}"),
        }
    }
}

/// Adds a job named `name` until an add goes through (the server is back), within 20 s.
#[cfg(feature = "redis")]
pub async fn added_again<B>(queue: &bullmq_core::Queue<B>, name: &str)
where
    B: bullmq_core::backend::AddJobs
        + bullmq_core::backend::QueueMeta
        + bullmq_core::backend::Lifecycle,
{
    eventually(
        "an add goes through again",
        Duration::from_secs(20),
        || async {
            queue
                .add(name, &serde_json::json!({}), bullmq_core::JobOptions::new())
                .await
                .is_ok()
        },
    )
    .await;
}
