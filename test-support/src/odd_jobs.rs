//! The worker the odd-jobs tests (jobs another runtime stored oddly) run on every store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq_core::backend::Backend;
use bullmq_core::worker::{JobError, Processor, WorkerOptions};
use bullmq_core::{QueueName, Worker};

/// How often each job ran, by the bytes of its id.
pub type Runs = Arc<Mutex<HashMap<Vec<u8>, usize>>>;

/// A worker on `name` that counts each run of each job, fails the jobs whose id starts with
/// `fail-` and completes the others with `"done"`; it drains after 500 ms and checks for
/// stalled jobs every `stalled`.
pub async fn counting_worker<B: Backend>(
    name: QueueName,
    backend: B,
    stalled: Duration,
) -> (Worker<B, impl Processor<B>>, Runs) {
    let runs: Runs = Arc::default();
    let counted = Arc::clone(&runs);
    let opts = WorkerOptions::new()
        .drain_delay(Duration::from_millis(500))
        .stalled_interval(stalled);
    let worker = Worker::new(name, backend, opts, move |job, _| {
        let counted = Arc::clone(&counted);
        async move {
            *counted
                .lock()
                .unwrap()
                .entry(job.id.as_bytes().to_vec())
                .or_default() += 1;
            if job.id.as_str().starts_with("fail-") {
                return Err(JobError::failed("boom"));
            }
            Ok(serde_json::json!("done"))
        }
    })
    .await
    .unwrap();
    (worker, runs)
}
