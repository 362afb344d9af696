//! Stalled-job recovery as a worker reports it, and starting a worker to watch its events.

use std::time::Duration;

use bullmq_core::backend::Backend;
use bullmq_core::worker::{Processor, WorkerEvent};
use bullmq_core::{JobId, Worker};
use tokio::sync::broadcast::Receiver;

use crate::wait::next_event;

/// Starts `worker` (built with `autorun(false)`, so that no event goes unseen) and waits,
/// within `limit`, until its stalled check reports job `id`.
pub async fn run_until_stalled<B: Backend, P: Processor<B>>(
    worker: &Worker<B, P>,
    id: &JobId,
    limit: Duration,
) {
    run_until(
        worker,
        "stalled",
        limit,
        |e| matches!(e, WorkerEvent::Stalled { job_id } if job_id == id),
    )
    .await;
}

/// Starts `worker` (built with `autorun(false)`, so that no event goes unseen) and waits,
/// within `limit`, for the first event `matches` accepts; the receiver, to watch on.
pub async fn run_until<B: Backend, P: Processor<B>>(
    worker: &Worker<B, P>,
    what: &str,
    limit: Duration,
    matches: impl Fn(&WorkerEvent) -> bool,
) -> Receiver<WorkerEvent> {
    let mut rx = worker.events();
    worker.run().unwrap();
    next_event(&mut rx, what, limit, matches).await;
    rx
}
