//! What the fault tests on a cluster and on Sentinel share: a backend on a queue of their
//! own, workers that count how often each job ran, and a producer that keeps adding through
//! the fault.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bullmq::redis::{RedisBackend, RedisError, RedisOptions};
use bullmq::{
    ActiveJob, BackendErrorKind, CancellationToken, JobId, JobOptions, Prefix, ProcessResult,
    Processor, Queue, QueueName, Worker, WorkerOptions,
};
use serde_json::json;

/// Jobs added in all.
pub const JOBS: usize = 400;
/// The fault strikes once this many have been added.
pub const FAULT_AT: usize = 150;

/// When each job started, once per run.
pub type Runs = Arc<Mutex<HashMap<String, Vec<Instant>>>>;

/// The jobs that ran more than once, with how often, sorted by id.
pub fn reruns(runs: &Runs) -> Vec<(String, usize)> {
    let mut more: Vec<(String, usize)> = runs
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(id, at)| (id.clone(), at.len()))
        .collect();
    more.sort();
    more
}

/// A backend on `queue` under `prefix`, reached through `url`.
pub async fn backend(url: &str, prefix: &Prefix, queue: &str) -> RedisBackend {
    backend_waiting(url, prefix, queue, false).await
}

/// [`backend`], whose adds and finishing calls wait for one replica when `wait` is set
/// (`RedisOptions::wait_for_replicas`, 500 ms).
pub async fn backend_waiting(url: &str, prefix: &Prefix, queue: &str, wait: bool) -> RedisBackend {
    let mut options = RedisOptions::new(url)
        .prefix(prefix.clone())
        .response_timeout(Duration::from_secs(3));
    if wait {
        options = options.wait_for_replicas(1, Duration::from_millis(500));
    }
    RedisBackend::connect(&options, QueueName::new(queue).unwrap())
        .await
        .unwrap()
}

/// A worker on `queue` whose jobs take 5 ms each and count their runs in `runs`; its lock
/// (2 s) and stalled checks (every 500 ms) are short, so a job stranded by the fault is
/// taken again soon.
pub async fn counting_worker(
    url: &str,
    prefix: &Prefix,
    queue: &str,
    runs: &Runs,
) -> Worker<RedisBackend, impl Processor<RedisBackend>> {
    counting_worker_on(backend(url, prefix, queue).await, queue, runs).await
}

/// [`counting_worker`] on a backend of the caller's.
pub async fn counting_worker_on(
    backend: RedisBackend,
    queue: &str,
    runs: &Runs,
) -> Worker<RedisBackend, impl Processor<RedisBackend>> {
    let opts = WorkerOptions::new();
    counting_worker_with(backend, queue, runs, Duration::from_millis(5), opts).await
}

/// [`counting_worker`] whose jobs take `work` each, on `opts` (its lock, stalled checks and
/// concurrency set on them).
pub async fn counting_worker_taking(
    url: &str,
    prefix: &Prefix,
    queue: &str,
    runs: &Runs,
    work: Duration,
    opts: WorkerOptions,
) -> Worker<RedisBackend, impl Processor<RedisBackend>> {
    counting_worker_with(backend(url, prefix, queue).await, queue, runs, work, opts).await
}

/// [`counting_worker_taking`] on a backend of the caller's.
async fn counting_worker_with(
    backend: RedisBackend,
    queue: &str,
    runs: &Runs,
    work: Duration,
    opts: WorkerOptions,
) -> Worker<RedisBackend, impl Processor<RedisBackend>> {
    let runs = Arc::clone(runs);
    let opts = opts
        .concurrency(10)
        .lock_duration(Duration::from_secs(2))
        .stalled_interval(Duration::from_millis(500))
        .max_stalled_count(100);
    Worker::new(
        QueueName::new(queue).unwrap(),
        backend,
        opts,
        move |job: ActiveJob<RedisBackend>, _: CancellationToken| {
            let runs = Arc::clone(&runs);
            async move {
                runs.lock()
                    .unwrap()
                    .entry(job.id.as_str().to_owned())
                    .or_default()
                    .push(Instant::now());
                // Simulates work, so that jobs are in flight when the fault strikes.
                tokio::time::sleep(work).await;
                ProcessResult::Ok(json!(null))
            }
        },
    )
    .await
    .unwrap()
}

/// Adds `JOBS` jobs with ids `job-<n>`, retrying each until it is in; runs `fault` once
/// `FAULT_AT` are in. Returns the ids and how many adds were refused along the way.
pub async fn produce(queue: &Queue<RedisBackend>, fault: impl FnOnce()) -> (Vec<JobId>, u32) {
    let produced = produce_timed(queue, fault, Duration::ZERO).await;
    (produced.ids, produced.failed_adds)
}

/// What [`produce_timed`] added, and the errors it met on the way.
pub struct Produced {
    /// The jobs added, in order.
    pub ids: Vec<JobId>,
    /// When each add was acknowledged.
    pub acked_at: Vec<SystemTime>,
    /// How many tries failed.
    pub failed_adds: u32,
    /// Those failures, by kind.
    pub errors: AddErrors,
}

/// The errors adds met, sorted by what the README says a caller may see.
#[derive(Debug, Default)]
pub struct AddErrors {
    /// Applied, but fewer replicas than `wait_for_replicas` asked confirmed it in time.
    pub not_replicated: u32,
    /// Timeouts.
    pub timed_out: u32,
    /// A refused write (`READONLY`, `NOREPLICAS`) after bullmq retried it for most of the
    /// response timeout: the new primary refusing writes too until the old one follows it.
    pub refused_after_retrying: u32,
    /// Anything else, with how long the add took: a refusal returned without retrying, a
    /// lost connection, another error.
    pub other: Vec<(String, Duration)>,
}

/// How long bullmq retries a refused write before it returns the refusal: most of the
/// response timeout (3 s, [`backend_waiting`]); the pauses between tries add up to 2.5 s.
const RETRIED_FOR: Duration = Duration::from_secs(2);

impl AddErrors {
    fn note(&mut self, e: &bullmq::Error, took: Duration) {
        let redis = match e {
            bullmq::Error::Backend(inner) => {
                (&**inner as &(dyn std::error::Error + 'static)).downcast_ref::<RedisError>()
            }
            _ => None,
        };
        let code = redis.and_then(|r| r.source.code());
        if redis.is_some_and(RedisError::is_not_replicated) {
            self.not_replicated += 1;
        } else if e.backend_kind() == Some(BackendErrorKind::Timeout) {
            self.timed_out += 1;
        } else if matches!(code, Some("READONLY" | "NOREPLICAS")) && took >= RETRIED_FOR {
            self.refused_after_retrying += 1;
        } else {
            self.other.push((e.to_string(), took));
        }
    }
}

/// [`produce`], with the moment each add was acknowledged and the errors met by kind, and
/// `pace` between two adds after the fault (so that adds go on through a failover that
/// takes a while).
pub async fn produce_timed(
    queue: &Queue<RedisBackend>,
    fault: impl FnOnce(),
    pace: Duration,
) -> Produced {
    let mut fault = Some(fault);
    let mut ids = Vec::new();
    let mut acked_at = Vec::new();
    let mut failed_adds = 0;
    let mut errors = AddErrors::default();
    for n in 0..JOBS {
        if n == FAULT_AT
            && let Some(fault) = fault.take()
        {
            fault();
        }
        if n > FAULT_AT && !pace.is_zero() {
            // The producer's rate, not a wait for something to happen.
            tokio::time::sleep(pace).await;
        }
        let opts = JobOptions::new().job_id(format!("job-{n}"));
        loop {
            let started = Instant::now();
            match queue.add("j", &json!({"n": n}), opts.clone()).await {
                Ok(job) => {
                    ids.push(job.id);
                    acked_at.push(SystemTime::now());
                    break;
                }
                Err(e) => {
                    failed_adds += 1;
                    errors.note(&e, started.elapsed());
                    assert!(failed_adds < 2000, "adds keep failing: {e}");
                    // The pause between two tries of an add the fault refused.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
    Produced {
        ids,
        acked_at,
        failed_adds,
        errors,
    }
}
