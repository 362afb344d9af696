//! Waiting in tests: for a condition polled against the store, or for a worker's event, each
//! within a limit that fails the test with what was awaited.

use std::future::Future;
use std::time::Duration;

use bullmq::WorkerEvent;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;

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
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next event of `rx` that `matches`, within `limit` (events it lagged behind are
/// skipped); panics naming `what` when the limit passes or the stream ends.
pub async fn next_event(
    rx: &mut Receiver<WorkerEvent>,
    what: &str,
    limit: Duration,
    matches: impl Fn(&WorkerEvent) -> bool,
) -> WorkerEvent {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Ok(e)) if matches(&e) => return e,
            Ok(Ok(_) | Err(RecvError::Lagged(_))) => {}
            Ok(Err(RecvError::Closed)) => panic!("events ended waiting for {what}"),
            Err(_) => panic!("timed out waiting for {what}"),
        }
    }
}

/// Adds a job named `name` until an add goes through (the server is back), within 20 s.
pub async fn added_again<B>(queue: &bullmq::Queue<B>, name: &str)
where
    B: bullmq::backend::AddJobs + bullmq::backend::QueueMeta,
{
    eventually(
        "an add goes through again",
        Duration::from_secs(20),
        || async {
            queue
                .add(name, &serde_json::json!({}), bullmq::JobOptions::new())
                .await
                .is_ok()
        },
    )
    .await;
}
