//! What the library records through `tracing`, read by a capturing subscriber: the spans of an
//! add, of each processing attempt (completed, failed and retried, unrecoverable) with their
//! finishing moves, of a stalled-jobs recovery, and the warn/info pair and `reconnect` span of
//! a Redis connection lost and recovered; and the health a worker reports meanwhile.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use crate::capture::Captured;
use bullmq::backend::LockToken;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::telemetry::RunState;
use bullmq::{
    ActiveJob, CancellationToken, Job, JobError, JobOptions, Prefix, ProcessResult, Queue,
    QueueEvents, QueueEventsOptions, QueueName, Worker, WorkerEvent, WorkerOptions,
};
use serde_json::json;
use tracing::Level;

/// A queue named `name` under `prefix` on the server at `url`, and fresh connections to it.
struct Obs {
    url: String,
    prefix: String,
    name: &'static str,
    queue: Queue<RedisBackend>,
}

impl Obs {
    async fn new(url: String, prefix: String, name: &'static str) -> Self {
        let backend = connect(&url, &prefix, name).await;
        let queue = Queue::try_new(QueueName::new(name).unwrap(), backend)
            .expect("the backend is bound to this queue");
        Self {
            url,
            prefix,
            name,
            queue,
        }
    }

    /// On the shared server, under a fresh prefix removed when the guard drops.
    async fn shared(name: &'static str) -> (Self, support::PrefixGuard) {
        let prefix = support::unique_prefix();
        let cleanup = support::PrefixGuard(prefix.clone());
        (Self::new(support::redis_url(), prefix, name).await, cleanup)
    }

    async fn backend(&self) -> RedisBackend {
        connect(&self.url, &self.prefix, self.name).await
    }

    async fn add(&self, name: &str, opts: JobOptions) -> Job {
        self.queue.add(name, &json!({}), opts).await.unwrap()
    }

    async fn worker<F, Fut>(&self, opts: WorkerOptions, f: F) -> Worker<RedisBackend, F>
    where
        F: Fn(ActiveJob<RedisBackend>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ProcessResult> + Send,
    {
        Worker::new(
            QueueName::new(self.name).unwrap(),
            self.backend().await,
            opts,
            f,
        )
        .await
        .unwrap()
    }
}

async fn connect(url: &str, prefix: &str, queue: &str) -> RedisBackend {
    let options = RedisOptions::new(url.to_owned()).prefix(Prefix::new(prefix).expect("prefix"));
    RedisBackend::connect(&options, QueueName::new(queue).unwrap())
        .await
        .expect("connect")
}

/// Waits for `n` jobs to finish for good (completed, or failed without retry).
async fn finished(events: &mut tokio::sync::broadcast::Receiver<WorkerEvent>, n: usize) {
    let mut done = 0;
    tokio::time::timeout(Duration::from_secs(30), async {
        while done < n {
            if let Ok(WorkerEvent::Completed { .. } | WorkerEvent::Failed { retried: false, .. }) =
                events.recv().await
            {
                done += 1;
            }
        }
    })
    .await
    .expect("the jobs finish");
}

#[tokio::test(flavor = "current_thread")]
async fn add_is_a_producer_span_with_node_s_fields_only() {
    let (captured, _guard) = Captured::start();
    let (obs, _cleanup) = Obs::shared("obs-add").await;
    let job = obs
        .queue
        .add("email", &json!({"to": "a@b.c"}), JobOptions::new())
        .await
        .unwrap();
    let adds = captured.spans_where("add", "bullmq.job.id", job.id.as_str());
    assert_eq!(adds.len(), 1, "{:?}", captured.spans());
    // The messaging attributes are off by default: Node's spans have none.
    adds[0].assert_fields(
        &[
            ("otel.name", "add obs-add.email"),
            ("otel.kind", "producer"),
            ("bullmq.queue.name", "obs-add"),
            ("bullmq.queue.operation", "add"),
            ("bullmq.job.name", "email"),
        ],
        &[
            "bullmq.job.id",
            "bullmq.job.name",
            "bullmq.queue.name",
            "bullmq.queue.operation",
            "otel.kind",
            "otel.name",
        ],
    );
    // Without the `otel` feature (or an OpenTelemetry layer) no context is written.
    assert!(job.opts.telemetry.is_none());
}

#[tokio::test(flavor = "current_thread")]
async fn each_attempt_is_a_consumer_span_with_its_outcome_and_finishing_move() {
    let (captured, _guard) = Captured::start();
    let (obs, _cleanup) = Obs::shared("obs-run").await;
    let ok = obs.add("ok", JobOptions::new()).await;
    let flaky = obs.add("flaky", JobOptions::new().attempts(2)).await;
    let fatal = obs.add("fatal", JobOptions::new().attempts(5)).await;
    let worker = obs
        .worker(
            WorkerOptions::new().name("obs-worker".to_owned()),
            |job, _cancel| async move {
                match job.name.as_str() {
                    "flaky" if job.attempts_made == 0 => Err(JobError::failed("first try fails")),
                    "fatal" => Err(JobError::unrecoverable("no way")),
                    _ => Ok(json!("done")),
                }
            },
        )
        .await;
    let mut events = worker.events();
    finished(&mut events, 3).await;
    worker.close().await;

    let attempts = |id: &str| captured.spans_where("process", "bullmq.job.id", id);
    let only_child = |parent: u64| {
        let children = captured.children(parent);
        assert_eq!(children.len(), 1, "one finishing move: {children:?}");
        children.into_iter().next().unwrap()
    };

    let ok_runs = attempts(ok.id.as_str());
    assert_eq!(ok_runs.len(), 1);
    let run = &ok_runs[0];
    run.assert_fields(
        &[
            ("otel.name", "process obs-run"),
            ("otel.kind", "consumer"),
            ("bullmq.job.name", "ok"),
            // Counted once the attempt is settled, as Node's worker records it.
            ("bullmq.job.attempts.made", "1"),
            ("bullmq.worker.name", "obs-worker"),
        ],
        &[
            "bullmq.job.attempt_finished_timestamp",
            "bullmq.job.attempts.made",
            "bullmq.job.id",
            "bullmq.job.name",
            "bullmq.job.processed.timestamp",
            "bullmq.queue.name",
            "bullmq.queue.operation",
            "bullmq.worker.id",
            "bullmq.worker.name",
            "otel.kind",
            "otel.name",
        ],
    );
    // A UUID, as Node's worker id.
    let worker_id = run.field("bullmq.worker.id").unwrap();
    assert_eq!(worker_id.len(), 36, "{worker_id}");
    assert_eq!(&worker_id[14..15], "4", "{worker_id}");
    let started: u64 = run
        .field("bullmq.job.processed.timestamp")
        .unwrap()
        .parse()
        .unwrap();
    let ended: u64 = run
        .field("bullmq.job.attempt_finished_timestamp")
        .unwrap()
        .parse()
        .unwrap();
    assert!(started > 1_700_000_000_000 && ended >= started);
    assert!(run.field("otel.status_code").is_none());
    let complete = only_child(run.id);
    assert_eq!(complete.name, "complete");
    assert_eq!(complete.field("otel.name"), Some("complete obs-run"));
    assert_eq!(complete.field("bullmq.job.id"), Some(ok.id.as_str()));

    let flaky_runs = attempts(flaky.id.as_str());
    assert_eq!(flaky_runs.len(), 2, "{flaky_runs:?}");
    let (first, second) = (&flaky_runs[0], &flaky_runs[1]);
    assert_eq!(first.field("bullmq.job.attempts.made"), Some("1"));
    // No status and no reason attribute: Node's `job failed` event carries the reason.
    assert_eq!(first.field("otel.status_code"), None);
    assert_eq!(first.field("bullmq.job.failed.reason"), None);
    let retry = only_child(first.id);
    assert_eq!(retry.name, "retry");
    assert_eq!(retry.field("otel.name"), Some("retry obs-run"));
    assert_eq!(retry.field("bullmq.job.attempts.made"), None);
    assert_eq!(second.field("bullmq.job.attempts.made"), Some("2"));
    assert_eq!(only_child(second.id).name, "complete");

    let fatal_runs = attempts(fatal.id.as_str());
    assert_eq!(fatal_runs.len(), 1, "unrecoverable: never retried");
    let run = &fatal_runs[0];
    assert_eq!(run.field("bullmq.job.attempts.made"), Some("1"));
    assert_eq!(run.field("otel.status_code"), None);
    let fail = only_child(run.id);
    assert_eq!(fail.name, "fail");
    assert_eq!(fail.field("otel.name"), Some("fail obs-run"));

    // No per-job logging above DEBUG: only the worker's start and stop are INFO (connection
    // events, which a loaded machine's response timeout may cause, are another test's).
    let loud: Vec<_> = captured
        .events()
        .into_iter()
        .filter(|e| e.level <= Level::INFO && !e.message().starts_with("redis connection"))
        .map(|e| e.message().to_owned())
        .collect();
    assert_eq!(loud, ["worker started", "worker stopped"]);
    let started = captured
        .events()
        .into_iter()
        .find(|e| e.message() == "worker started")
        .unwrap();
    assert_eq!(
        started.fields.get("concurrency").map(String::as_str),
        Some("1")
    );
    let stopped = captured
        .events()
        .into_iter()
        .find(|e| e.message() == "worker stopped")
        .unwrap();
    assert!(stopped.fields.contains_key("uptime_ms"));
}

#[tokio::test(flavor = "current_thread")]
async fn a_stalled_recovery_is_a_span_with_the_jobs_recovered() {
    let (captured, _guard) = Captured::start();
    let (obs, _cleanup) = Obs::shared("obs-stall").await;
    let job = obs.add("stuck", JobOptions::new()).await;
    // Taken by hand under a short lock that nobody renews: it stalls.
    let taker = obs
        .worker(
            WorkerOptions::new()
                .autorun(false)
                .lock_duration(Duration::from_millis(300)),
            |_job, _cancel| async { Ok(json!(null)) },
        )
        .await;
    let taken = taker
        .get_next_job(&LockToken::new("abandoned"), false)
        .await
        .unwrap()
        .expect("the job");
    assert_eq!(taken.id, job.id);
    let rescuer = obs
        .worker(
            WorkerOptions::new()
                .name("rescuer".to_owned())
                .stalled_interval(Duration::from_millis(500)),
            |_job, _cancel| async { Ok(json!("rescued")) },
        )
        .await;
    let mut events = rescuer.events();
    finished(&mut events, 1).await;
    rescuer.close().await;
    taker.close().await;

    // The ids recovered, as Node's worker lists them (JSON text outside OpenTelemetry).
    let stalled_ids = format!("[\"{}\"]", job.id);
    let recoveries = captured.spans_where(
        "moveStalledJobsToWait",
        "bullmq.worker.stalled.jobs",
        &stalled_ids,
    );
    assert_eq!(recoveries.len(), 1, "{:?}", captured.spans());
    let recovery = &recoveries[0];
    // The first check, with the job still locked, found nothing: it lists no id.
    assert!(
        !captured
            .spans_where("moveStalledJobsToWait", "bullmq.worker.stalled.jobs", "[]")
            .is_empty(),
        "{:?}",
        captured.spans()
    );
    // Without the `otel` feature the `job stalled` span event is a DEBUG event in the span
    // (with it, an OpenTelemetry span event: tests/interop/otel.rs).
    #[cfg(not(feature = "otel"))]
    {
        let per_job: Vec<_> = captured
            .events()
            .into_iter()
            .filter(|e| e.message() == "job stalled")
            .collect();
        assert_eq!(
            per_job.len(),
            1,
            "one `job stalled` event per job: {per_job:?}"
        );
        assert_eq!(per_job[0].level, Level::DEBUG);
        assert_eq!(per_job[0].span, Some("moveStalledJobsToWait"));
        assert!(
            per_job[0].fields["attributes"].contains(job.id.as_str()),
            "{per_job:?}"
        );
    }
    assert_eq!(
        recovery.field("otel.name"),
        Some("moveStalledJobsToWait obs-stall")
    );
    assert_eq!(recovery.field("bullmq.worker.name"), Some("rescuer"));
    let event = captured
        .events()
        .into_iter()
        .find(|e| e.message() == "stalled jobs recovered")
        .expect("an INFO event for the recovery");
    assert_eq!(event.level, Level::INFO);
    // Logged beside the span, not in it: Node's span has no such event.
    assert_eq!(event.span, None);
    assert_eq!(event.fields.get("recovered").map(String::as_str), Some("1"));
}

#[tokio::test(flavor = "current_thread")]
async fn a_lost_connection_warns_and_its_recovery_is_logged_in_a_reconnect_span() {
    let (captured, _guard) = Captured::start();
    let mut server = support::PrivateRedis::start();
    let obs = Obs::new(server.url(), "obs".to_owned(), "obs-net").await;
    let queue = &obs.queue;
    let worker = obs
        .worker(
            WorkerOptions::new()
                .drain_delay(Duration::from_secs(1))
                .run_retry_delay(Duration::from_millis(200)),
            |_job, _cancel| async { Ok(json!(null)) },
        )
        .await;
    let events = QueueEvents::new(obs.backend().await, QueueEventsOptions::default()).unwrap();
    events.wait_until_ready().await.unwrap();
    obs.add("before", JobOptions::new()).await;
    support::wait::eventually("healthy and running", Duration::from_secs(10), || async {
        let h = worker.health();
        h.state == RunState::Running && h.connection.healthy && h.connection.last_ok_ms.is_some()
    })
    .await;

    server.kill_server();
    let refused = queue.add("lost", &json!({}), JobOptions::new()).await;
    assert!(refused.is_err(), "no server: the add fails");
    support::wait::eventually(
        "the worker sees the loss",
        Duration::from_secs(20),
        || async { !worker.health().connection.healthy },
    )
    .await;
    assert!(!worker.health().is_ready());
    support::wait::eventually(
        "the reader sees the loss",
        Duration::from_secs(20),
        || async { !events.health().connection.healthy },
    )
    .await;

    server.restart();
    support::wait::added_again(queue, "after").await;
    support::wait::eventually("the worker recovers", Duration::from_secs(20), || async {
        worker.health().connection.healthy
    })
    .await;
    assert!(worker.health().is_ready());
    support::wait::eventually("the reader recovers", Duration::from_secs(20), || async {
        events.health().is_ready()
    })
    .await;
    events.close().await;
    assert_eq!(events.health().state, RunState::Closed);
    worker.close().await;
    assert_eq!(worker.health().state, RunState::Closed);

    let address = format!("127.0.0.1:{}", server.port);
    let recovered = captured.assert_loss_logged(
        "redis connection lost",
        "redis connection recovered",
        |named| named == address,
    );
    // The recovery seen by the reconnect itself is logged inside its span (a call begun before
    // the loss may also see the server back, outside it).
    assert!(recovered.iter().any(|e| e.span == Some("reconnect")));
    assert!(captured.spans().iter().any(|s| s.name == "reconnect"));
}

/// The connection RESP3 (and TLS) use, the multiplexed fallback, is watched as the direct
/// path is: its loss is a WARN, its recovery an INFO, naming the server.
#[tokio::test(flavor = "current_thread")]
async fn a_lost_resp3_connection_warns_and_its_recovery_is_logged() {
    let (captured, _guard) = Captured::start();
    let mut server = support::PrivateRedis::start();
    let url = format!("{}?protocol=resp3", server.url());
    let obs = Obs::new(url, "obs".to_owned(), "obs-resp3").await;
    obs.add("before", JobOptions::new()).await;

    server.kill_server();
    let refused = obs.queue.add("lost", &json!({}), JobOptions::new()).await;
    assert!(refused.is_err(), "no server: the add fails");
    server.restart();
    support::wait::added_again(&obs.queue, "after").await;

    let address = format!("127.0.0.1:{}", server.port);
    captured.assert_loss_logged(
        "redis connection lost",
        "redis connection recovered",
        |named| named == address,
    );
}

/// An attempt that leaves its job rate limited or waiting for children records no count of
/// attempts on its `process` span (Node counts only completed and failed attempts); the rate
/// limit is Node's `rateLimit` span with the worker's id and limit, inside the attempt's.
#[tokio::test(flavor = "current_thread")]
async fn an_attempt_rate_limited_or_waiting_for_children_counts_no_attempt() {
    let (captured, _guard) = Captured::start();
    let (obs, _cleanup) = Obs::shared("obs-park").await;
    let limited = obs.add("limited", JobOptions::new()).await;
    let parked = obs.add("parked", JobOptions::new()).await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let worker = obs
        .worker(WorkerOptions::new(), move |job, _cancel| {
            let first = seen.lock().unwrap().insert(job.name.clone());
            async move {
                match job.name.as_str() {
                    "limited" if first => Err(JobError::RateLimited {
                        delay: Duration::from_millis(200),
                    }),
                    // No child: the job goes back to wait and runs again.
                    "parked" if first => Err(JobError::WaitingChildren),
                    _ => Ok(json!("done")),
                }
            }
        })
        .await;
    let mut events = worker.events();
    finished(&mut events, 2).await;
    worker.close().await;

    for job in [&limited, &parked] {
        let runs = captured.spans_where("process", "bullmq.job.id", job.id.as_str());
        let made: Vec<_> = runs
            .iter()
            .map(|r| r.field("bullmq.job.attempts.made"))
            .collect();
        assert_eq!(made, [None, Some("1")], "{runs:?}");
        assert!(
            runs.iter()
                .all(|r| r.field("bullmq.job.attempt_finished_timestamp").is_some()),
            "{runs:?}"
        );
    }
    let limits: Vec<_> = captured
        .spans()
        .into_iter()
        .filter(|s| s.name == "rateLimit")
        .collect();
    assert_eq!(limits.len(), 1, "{limits:?}");
    assert_eq!(limits[0].field("bullmq.worker.rate.limit"), Some("200"));
    assert!(limits[0].field("bullmq.worker.id").is_some());
    let limited_run = captured.spans_where("process", "bullmq.job.id", limited.id.as_str());
    assert_eq!(limits[0].parent, Some(limited_run[0].id));
}

/// A stalled-jobs check that fails records an `exception` event on its span, as Node's
/// `trace` records what the check threw (a DEBUG event in the span without the `otel`
/// feature); no span gets an error status, as none of Node's does.
#[cfg(not(feature = "otel"))]
#[tokio::test(flavor = "current_thread")]
async fn a_failed_stalled_check_records_an_exception() {
    let (captured, _guard) = Captured::start();
    let mut server = support::PrivateRedis::start();
    let obs = Obs::new(server.url(), "obs".to_owned(), "obs-bg").await;
    let started = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = started.clone();
    let worker = obs
        .worker(
            WorkerOptions::new()
                .lock_duration(Duration::from_secs(1))
                .stalled_interval(Duration::from_millis(300))
                .run_retry_delay(Duration::from_millis(200)),
            move |_job, _cancel| {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                async {
                    // Fixed wait: simulates work (a job that takes this long).
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    Ok(json!(null))
                }
            },
        )
        .await;
    obs.add("long", JobOptions::new()).await;
    support::wait::eventually("the job runs", Duration::from_secs(10), || async {
        started.load(std::sync::atomic::Ordering::SeqCst)
    })
    .await;

    server.kill_server();
    support::wait::eventually("a failed stalled check", Duration::from_secs(10), || {
        let captured = captured.clone();
        async move {
            captured.events().iter().any(|e| {
                e.message() == "exception"
                    && e.span == Some("moveStalledJobsToWait")
                    && e.fields
                        .get("attributes")
                        .is_some_and(|a| a.contains("exception.message"))
            })
        }
    })
    .await;
    server.restart();
    worker.close().await;
    assert!(
        captured
            .spans()
            .iter()
            .all(|s| s.field("otel.status_code").is_none())
    );
}
