//! Stalled-job recovery as a worker reports it.

use std::time::Duration;

use bullmq_core::backend::Backend;
use bullmq_core::worker::{Processor, WorkerEvent};
use bullmq_core::{JobId, Worker};

use crate::wait::next_event;

/// Starts `worker` (built with `autorun(false)`, so that no event goes unseen) and waits,
/// within `limit`, until its stalled check reports job `id`.
pub async fn run_until_stalled<B: Backend, P: Processor<B>>(
    worker: &Worker<B, P>,
    id: &JobId,
    limit: Duration,
) {
    let mut rx = worker.events();
    worker.run().unwrap();
    next_event(
        &mut rx,
        "stalled",
        limit,
        |e| matches!(e, WorkerEvent::Stalled { job_id } if job_id == id),
    )
    .await;
}
