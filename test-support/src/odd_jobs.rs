//! The worker the odd-jobs tests (jobs another runtime stored oddly) run on every store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq_core::backend::{Backend, Queries, Range};
use bullmq_core::job::JobState;
use bullmq_core::worker::{JobError, Processor, WorkerOptions};
use bullmq_core::{Job, Queue, QueueName, Worker};

/// What an odd job must end as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Completed after this many runs of the processor.
    Completed(usize),
    /// Failed after this many runs, its reason naming this text (a field, or the cause).
    Failed(usize, &'static str),
}

impl End {
    /// The finished state it names: `completed` or `failed`.
    pub fn state(self) -> &'static str {
        match self {
            Self::Completed(_) => "completed",
            Self::Failed(..) => "failed",
        }
    }

    /// Asserts that job `case` ended so: `reached` whether it is in [`End::state`], `ran` how
    /// often the processor ran it, `reason` its failed reason.
    pub fn assert_reached(self, case: &str, reached: bool, ran: usize, reason: Option<&str>) {
        let (runs, named) = match self {
            Self::Completed(runs) => (runs, None),
            Self::Failed(runs, named) => (runs, Some(named)),
        };
        assert!(reached, "{case} is not {}: {reason:?}", self.state());
        assert_eq!(ran, runs, "{case} ran {ran} times");
        if let Some(named) = named {
            let reason = reason.unwrap_or_default();
            assert!(reason.contains(named), "{case}: {reason}");
        }
    }
}

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

/// Lists the finished jobs of `queue` both ways and asserts that each of the `total` is read or
/// reported, that those in `bad` are reported, each report's reason naming `field`, and that
/// the plain listing gives the jobs read; returns those.
pub async fn assert_listed<B: Queries>(
    queue: &Queue<B>,
    total: usize,
    bad: &[&str],
    field: &str,
) -> Vec<Job> {
    let states = [JobState::Completed.into(), JobState::Failed.into()];
    let checked = queue.get_jobs_checked(&states, Range::ALL).await.unwrap();
    assert_eq!(checked.jobs.len() + checked.undecodable.len(), total);
    let reported: Vec<String> = checked
        .undecodable
        .iter()
        .map(|(id, _)| id.to_string())
        .collect();
    for expected in bad {
        assert!(
            reported.iter().any(|id| id == expected),
            "{expected} not reported: {reported:?}"
        );
    }
    for (id, reason) in &checked.undecodable {
        assert!(reason.to_string().contains(field), "{id}: {reason}");
    }
    let plain = queue.get_jobs(&states, Range::ALL).await.unwrap();
    assert_eq!(plain.len(), checked.jobs.len());
    checked.jobs
}
