//! The Rust `Worker` against a real Redis: every processor outcome, retries under each backoff,
//! concurrency, locks, stalled recovery, close, pause, events, panics, corrupt jobs, and a
//! Node.js BullMQ 6.7.0 worker on the same queue.

#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bullmq::core::backend::{FetchParams, LockToken, Transitions};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, Backoff, CancellationToken, Error, JobError, JobId, JobOptions, JobState, Prefix,
    ProcessResult, Queue, QueueName, ScriptErrorCode, Worker, WorkerEvent, WorkerOptions,
};
use serde_json::{Value, json};

use support::now_ms;
use support::wait::{eventually, next_event};

type W<F> = Worker<RedisBackend, F>;

struct Ctx {
    prefix: String,
    _guard: support::PrefixGuard,
    name: QueueName,
    queue: Queue<RedisBackend>,
}

impl Ctx {
    async fn new(queue: &str) -> Self {
        let prefix = support::unique_prefix();
        let guard = support::PrefixGuard(prefix.clone());
        let name = QueueName::new(queue).unwrap();
        let mut ctx = Self {
            prefix,
            _guard: guard,
            queue: Queue::new(name.clone(), dummy_backend().await),
            name,
        };
        ctx.queue = Queue::new(ctx.name.clone(), ctx.connect().await);
        ctx
    }

    /// A fresh connection (a worker closes the backend it is given).
    async fn connect(&self) -> RedisBackend {
        let options =
            RedisOptions::new(support::redis_url()).prefix(Prefix::new(&self.prefix).unwrap());
        RedisBackend::connect(&options, self.name.clone())
            .await
            .unwrap()
    }

    async fn worker<F, Fut>(&self, opts: WorkerOptions, f: F) -> W<F>
    where
        F: Fn(ActiveJob<RedisBackend>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ProcessResult> + Send,
    {
        Worker::new(self.name.clone(), self.connect().await, opts, f)
            .await
            .unwrap()
    }

    async fn add(&self, name: &str, data: Value, opts: JobOptions) -> JobId {
        self.queue.add(name, &data, opts).await.unwrap().id
    }

    async fn state(&self, id: &JobId) -> Option<JobState> {
        self.queue.job(id.clone()).get_state().await.unwrap()
    }

    async fn job(&self, id: &JobId) -> bullmq::Job {
        self.queue.get_job(id).await.unwrap().unwrap()
    }

    async fn wait_state(&self, id: &JobId, state: JobState) {
        eventually(&format!("job {id} {state:?}"), WAIT, || async {
            self.state(id).await == Some(state)
        })
        .await;
    }

    /// A job as Node.js's `Job#asJSON` gives it, with its JSON-text fields parsed back.
    fn node_job(&self, id: &JobId) -> Value {
        let mut job = self.node(&["getJob", id.as_str()]);
        for field in [
            "returnvalue",
            "failedReason",
            "progress",
            "stacktrace",
            "data",
        ] {
            if let Some(text) = job[field].as_str() {
                job[field] = serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()));
            }
        }
        job
    }

    fn node(&self, args: &[&str]) -> Value {
        let out = support::run_node_args(
            &[&["queue-op.mjs"], args].concat(),
            &[("PREFIX", &self.prefix), ("QUEUE", self.name.as_str())],
        );
        serde_json::from_str(out.trim()).unwrap()
    }
}

async fn dummy_backend() -> RedisBackend {
    RedisBackend::connect(
        &RedisOptions::new(support::redis_url()),
        QueueName::new("unused").unwrap(),
    )
    .await
    .unwrap()
}

/// How long a test waits for a state or an event.
const WAIT: Duration = Duration::from_secs(20);

fn fast() -> WorkerOptions {
    WorkerOptions::new().drain_delay(Duration::from_millis(500))
}

#[tokio::test]
async fn completes_with_the_return_value_and_events() {
    let ctx = Ctx::new("complete").await;
    let id = ctx
        .add("sum", json!({"a": 2, "b": 3}), JobOptions::new())
        .await;
    let worker = ctx
        .worker(
            fast().name("rusty".into()).autorun(false),
            |job, _| async move {
                let v: Value = job.data_as()?;
                job.update_progress(&json!({"pct": 50})).await?;
                Ok(json!({"sum": v["a"].as_i64().unwrap() + v["b"].as_i64().unwrap()}))
            },
        )
        .await;
    let mut rx = worker.events();
    worker.run().unwrap();
    next_event(
        &mut rx,
        "active",
        WAIT,
        |e| matches!(e, WorkerEvent::Active { job } if job.id == id),
    )
    .await;
    next_event(
        &mut rx,
        "progress",
        WAIT,
        |e| matches!(e, WorkerEvent::Progress { progress, .. } if progress["pct"] == 50),
    )
    .await;
    let done = next_event(&mut rx, "completed", WAIT, |e| {
        matches!(e, WorkerEvent::Completed { .. })
    })
    .await;
    let WorkerEvent::Completed { return_value, .. } = done else {
        unreachable!()
    };
    assert_eq!(return_value, r#"{"sum":5}"#);
    ctx.wait_state(&id, JobState::Completed).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.return_value.as_deref(), Some(r#"{"sum":5}"#));
    assert_eq!(job.processed_by.as_deref(), Some("rusty"));
    assert_eq!((job.attempts_made, job.attempts_started), (1, 1));
    // Node reads it as a Node worker would have written it.
    let node = ctx.node_job(&id);
    assert_eq!(node["returnvalue"], json!({"sum": 5}));
    assert_eq!(node["progress"], json!({"pct": 50}));
    worker.close().await;
    assert!(!worker.is_running());
}

#[tokio::test]
async fn failures_are_retried_per_each_backoff_then_failed() {
    let ctx = Ctx::new("retries").await;
    let fixed = ctx
        .add(
            "f",
            json!({}),
            JobOptions::new()
                .attempts(3)
                .backoff(Backoff::fixed(Duration::from_millis(50))),
        )
        .await;
    let expo = ctx
        .add(
            "e",
            json!({}),
            JobOptions::new()
                .attempts(3)
                .backoff(Backoff::exponential(Duration::from_millis(40)).jitter(0.5)),
        )
        .await;
    let custom = ctx
        .add(
            "c",
            json!({}),
            JobOptions::new()
                .attempts(3)
                .backoff(Backoff::custom("linear")),
        )
        .await;
    let none = ctx.add("n", json!({}), JobOptions::new().attempts(2)).await;
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let queue = Queue::new(ctx.name.clone(), ctx.connect().await);
    let worker = Worker::builder(
        queue,
        move |job: ActiveJob<RedisBackend>, _c: CancellationToken| {
            let seen = Arc::clone(&seen);
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                Err::<Value, _>(JobError::Failed {
                    message: format!("boom {}", job.attempts_made),
                    stack: Some(format!("Error: boom\n    at attempt {}", job.attempts_made)),
                })
            }
        },
    )
    .options(fast().concurrency(4))
    .backoff_strategy("linear", |n, _job, msg| {
        assert!(msg.starts_with("boom"));
        Some(Duration::from_millis(u64::from(n) * 30))
    })
    .build()
    .await
    .unwrap();
    for id in [&fixed, &expo, &custom] {
        ctx.wait_state(id, JobState::Failed).await;
        let job = ctx.job(id).await;
        assert_eq!(job.attempts_made, 3, "{id}");
        assert_eq!(job.failed_reason.as_deref(), Some("boom 2"));
        assert_eq!(job.stacktrace.len(), 3);
        assert_eq!(job.stacktrace[0], "Error: boom\n    at attempt 0");
    }
    ctx.wait_state(&none, JobState::Failed).await;
    assert_eq!(ctx.job(&none).await.attempts_made, 2);
    assert_eq!(calls.load(Ordering::SeqCst), 11);
    let node = ctx.node_job(&fixed);
    assert_eq!(node["failedReason"], "boom 2");
    assert_eq!(node["attemptsMade"], 3);
    worker.close().await;
}

#[tokio::test]
async fn unrecoverable_and_panicking_processors_fail_without_retry() {
    let ctx = Ctx::new("fatal").await;
    let fatal = ctx
        .add("fatal", json!({}), JobOptions::new().attempts(5))
        .await;
    let panics = ctx.add("panic", json!({}), JobOptions::new()).await;
    let after = ctx.add("fine", json!({}), JobOptions::new()).await;
    let worker = ctx
        .worker(fast(), |job, _| async move {
            match job.name.as_str() {
                "fatal" => Err(JobError::unrecoverable("no retry")),
                "panic" => panic!("processor blew up"),
                _ => Ok(json!("ok")),
            }
        })
        .await;
    ctx.wait_state(&fatal, JobState::Failed).await;
    let job = ctx.job(&fatal).await;
    assert_eq!(
        (job.attempts_made, job.failed_reason.as_deref()),
        (1, Some("no retry"))
    );
    ctx.wait_state(&panics, JobState::Failed).await;
    let reason = ctx.job(&panics).await.failed_reason.unwrap();
    assert!(
        reason.contains("panicked") && reason.contains("processor blew up"),
        "{reason}"
    );
    ctx.wait_state(&after, JobState::Completed).await;
    assert!(worker.is_running());
    worker.close().await;
}

#[tokio::test]
async fn delay_rate_limit_back_to_wait_and_waiting_children_outcomes() {
    let ctx = Ctx::new("outcomes").await;
    let delayed = ctx.add("delay", json!({}), JobOptions::new()).await;
    let again = ctx.add("again", json!({}), JobOptions::new()).await;
    let parent = ctx.add("parent", json!({}), JobOptions::new()).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let worker = ctx
        .worker(fast(), move |job, _| {
            let counter = Arc::clone(&counter);
            async move {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let _ = n;
                match (job.name.as_str(), job.attempts_started) {
                    ("delay", _) => Err(JobError::Delay {
                        until: now_ms() + 60_000,
                    }),
                    ("again", 1) => Err(JobError::BackToWait),
                    ("parent", 1) => Err(JobError::WaitingChildren),
                    ("limit", 1) => Err(JobError::RateLimited {
                        delay: Duration::from_millis(700),
                    }),
                    _ => Ok(json!(job.attempts_started)),
                }
            }
        })
        .await;
    ctx.wait_state(&delayed, JobState::Delayed).await;
    let job = ctx.job(&delayed).await;
    assert_eq!(job.attempts_made, 0, "a deliberate delay is not an attempt");
    assert!(job.delay > Duration::from_secs(50));
    ctx.wait_state(&again, JobState::Completed).await;
    assert_eq!(ctx.job(&again).await.return_value.as_deref(), Some("2"));
    // No pending child: the parent runs again and completes.
    ctx.wait_state(&parent, JobState::Completed).await;
    assert_eq!(ctx.job(&parent).await.return_value.as_deref(), Some("2"));

    let limited = ctx.add("limit", json!({}), JobOptions::new()).await;
    let started = std::time::Instant::now();
    ctx.wait_state(&limited, JobState::Completed).await;
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "the queue was rate limited"
    );
    assert_eq!(ctx.job(&limited).await.return_value.as_deref(), Some("2"));
    worker.close().await;
}

#[tokio::test]
async fn concurrency_runs_jobs_in_parallel() {
    let ctx = Ctx::new("parallel").await;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(ctx.add("p", json!({"i": i}), JobOptions::new()).await);
    }
    let now = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (n, p) = (Arc::clone(&now), Arc::clone(&peak));
    let worker = ctx
        .worker(fast().concurrency(3), move |_job, _| {
            let (n, p) = (Arc::clone(&n), Arc::clone(&p));
            async move {
                let running = n.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(running, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(300)).await;
                n.fetch_sub(1, Ordering::SeqCst);
                Ok(Value::Null)
            }
        })
        .await;
    for id in &ids {
        ctx.wait_state(id, JobState::Completed).await;
    }
    assert_eq!(peak.load(Ordering::SeqCst), 3);
    worker.set_concurrency(5).unwrap();
    assert_eq!(worker.concurrency(), 5);
    worker.close().await;
}

#[tokio::test]
async fn lock_renewal_keeps_a_long_job() {
    let ctx = Ctx::new("renewal").await;
    let id = ctx.add("long", json!({}), JobOptions::new()).await;
    let opts = fast()
        .lock_duration(Duration::from_millis(600))
        .stalled_interval(Duration::from_millis(100));
    let worker = ctx
        .worker(opts, |_job, _| async move {
            tokio::time::sleep(Duration::from_millis(2000)).await;
            Ok(json!("kept"))
        })
        .await;
    let mut rx = worker.events();
    ctx.wait_state(&id, JobState::Completed).await;
    let job = ctx.job(&id).await;
    assert_eq!((job.attempts_started, job.stalled_counter), (1, 0));
    while let Ok(e) = rx.try_recv() {
        assert!(
            !matches!(
                e,
                WorkerEvent::Stalled { .. } | WorkerEvent::LockLost { .. }
            ),
            "{e:?}"
        );
    }
    worker.close().await;
}

#[tokio::test]
async fn a_lost_lock_cancels_the_token_and_the_late_finish_is_refused() {
    let ctx = Ctx::new("lost").await;
    let id = ctx.add("victim", json!({}), JobOptions::new()).await;
    let opts = fast()
        .lock_duration(Duration::from_millis(600))
        .skip_stalled_check(true);
    let worker = ctx
        .worker(opts, |_job, cancel| async move {
            tokio::select! {
                () = cancel.cancelled() => Ok(json!("late")),
                () = tokio::time::sleep(Duration::from_secs(10)) => Ok(json!("not cancelled")),
            }
        })
        .await;
    let mut rx = worker.events();
    ctx.wait_state(&id, JobState::Active).await;
    let mut con = support::redis().await;
    let lock = format!("{}:{}:{}:lock", ctx.prefix, ctx.name.as_str(), id);
    let _: () = redis::cmd("DEL")
        .arg(&lock)
        .query_async(&mut con)
        .await
        .unwrap();
    next_event(
        &mut rx,
        "lock lost",
        WAIT,
        |e| matches!(e, WorkerEvent::LockLost { job_id } if *job_id == id),
    )
    .await;
    let refused = next_event(&mut rx, "refused finish", WAIT, |e| {
        matches!(e, WorkerEvent::Error(err) if matches!(&**err, Error::Script(s) if s.command == "moveToFinished"))
    })
    .await;
    let WorkerEvent::Error(err) = refused else {
        unreachable!()
    };
    let Error::Script(script) = &*err else {
        unreachable!()
    };
    assert_eq!(script.code, ScriptErrorCode::LockNotFound);
    assert_eq!(
        ctx.state(&id).await,
        Some(JobState::Active),
        "left for the stalled check"
    );
    assert!(ctx.job(&id).await.return_value.is_none());
    worker.close().await;
}

/// Takes a job as a crashed worker would have: active, with a short lock nobody renews.
async fn take_and_abandon(ctx: &Ctx) -> JobId {
    let fetch = FetchParams {
        token: LockToken::new("crashed"),
        lock_duration: Duration::from_millis(100),
        limiter: None,
        worker_name: None,
    };
    let next = ctx.queue.backend().move_to_active(&fetch).await.unwrap();
    next.job.unwrap().id
}

#[tokio::test]
async fn a_stalled_job_is_moved_back_and_processed() {
    let ctx = Ctx::new("stalled").await;
    let id = ctx.add("s", json!({}), JobOptions::new()).await;
    assert_eq!(take_and_abandon(&ctx).await, id);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let opts = fast().stalled_interval(Duration::from_millis(100));
    let worker = ctx
        .worker(opts.autorun(false), |_job, _| async move {
            Ok(json!("recovered"))
        })
        .await;
    let mut rx = worker.events();
    worker.run().unwrap();
    next_event(
        &mut rx,
        "stalled",
        WAIT,
        |e| matches!(e, WorkerEvent::Stalled { job_id } if *job_id == id),
    )
    .await;
    ctx.wait_state(&id, JobState::Completed).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.stalled_counter, 1);
    assert_eq!(job.return_value.as_deref(), Some("\"recovered\""));
    worker.close().await;
}

#[tokio::test]
async fn a_job_stalled_too_often_fails() {
    let ctx = Ctx::new("stalled-out").await;
    let id = ctx.add("s", json!({}), JobOptions::new()).await;
    take_and_abandon(&ctx).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let opts = fast()
        .stalled_interval(Duration::from_millis(100))
        .max_stalled_count(0);
    let worker = ctx
        .worker(opts, |_job, _| async move { Ok(json!("never")) })
        .await;
    ctx.wait_state(&id, JobState::Failed).await;
    assert_eq!(
        ctx.job(&id).await.failed_reason.as_deref(),
        Some("job stalled more than allowable limit")
    );
    worker.close().await;
}

#[tokio::test]
async fn graceful_close_waits_for_jobs_in_flight() {
    let ctx = Ctx::new("close").await;
    let a = ctx.add("a", json!({}), JobOptions::new()).await;
    let b = ctx.add("b", json!({}), JobOptions::new()).await;
    let worker = ctx
        .worker(fast().concurrency(2), |_job, _| async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            Ok(json!(1))
        })
        .await;
    let mut rx = worker.events();
    ctx.wait_state(&a, JobState::Active).await;
    ctx.wait_state(&b, JobState::Active).await;
    let late = ctx.add("late", json!({}), JobOptions::new()).await;
    worker.close().await;
    assert_eq!(ctx.state(&a).await, Some(JobState::Completed));
    assert_eq!(ctx.state(&b).await, Some(JobState::Completed));
    assert_eq!(
        ctx.state(&late).await,
        Some(JobState::Waiting),
        "not taken while closing"
    );
    next_event(&mut rx, "closing", WAIT, |e| {
        matches!(e, WorkerEvent::Closing)
    })
    .await;
    next_event(&mut rx, "closed", WAIT, |e| {
        matches!(e, WorkerEvent::Closed)
    })
    .await;

    // With a timeout too short, the job is left active for the stalled check, not lost.
    let slow = ctx.add("slow", json!({}), JobOptions::new()).await;
    let worker = ctx
        .worker(fast().concurrency(2), |_job, _| async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(json!(1))
        })
        .await;
    eventually("a job taken", WAIT, || async { worker.active_count() > 0 }).await;
    assert!(!worker.close_timeout(Duration::from_millis(100)).await);
    let state = ctx.state(&slow).await;
    let late_state = ctx.state(&late).await;
    assert!(
        state == Some(JobState::Active) || late_state == Some(JobState::Active),
        "{state:?} {late_state:?}"
    );
}

#[tokio::test]
async fn pause_and_resume() {
    let ctx = Ctx::new("pause").await;
    let worker = ctx
        .worker(fast(), |_job, _| async move { Ok(json!(1)) })
        .await;
    let mut rx = worker.events();
    worker.pause(false).await;
    assert!(worker.is_paused());
    next_event(&mut rx, "paused", WAIT, |e| {
        matches!(e, WorkerEvent::Paused)
    })
    .await;
    let id = ctx.add("p", json!({}), JobOptions::new()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(ctx.state(&id).await, Some(JobState::Waiting));
    worker.resume();
    next_event(&mut rx, "resumed", WAIT, |e| {
        matches!(e, WorkerEvent::Resumed)
    })
    .await;
    ctx.wait_state(&id, JobState::Completed).await;
    worker.close().await;
}

#[tokio::test]
async fn a_corrupt_job_is_failed_and_the_worker_goes_on() {
    let ctx = Ctx::new("corrupt").await;
    let bad = ctx.add("bad", json!({}), JobOptions::new()).await;
    let good = ctx.add("good", json!({}), JobOptions::new()).await;
    let mut con = support::redis().await;
    let key = format!("{}:{}:{}", ctx.prefix, ctx.name.as_str(), bad);
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg("timestamp")
        .arg("soon")
        .query_async(&mut con)
        .await
        .unwrap();
    let worker = ctx
        .worker(
            fast().autorun(false),
            |_job, _| async move { Ok(json!("fine")) },
        )
        .await;
    let mut rx = worker.events();
    worker.run().unwrap();
    next_event(
        &mut rx,
        "decode error",
        WAIT,
        |e| matches!(e, WorkerEvent::Error(err) if matches!(&**err, Error::JobDecode(_))),
    )
    .await;
    ctx.wait_state(&good, JobState::Completed).await;
    eventually("bad job failed", WAIT, || async {
        ctx.state(&bad).await == Some(JobState::Failed)
    })
    .await;
    let reason: String = redis::cmd("HGET")
        .arg(&key)
        .arg("failedReason")
        .query_async(&mut con)
        .await
        .unwrap();
    assert!(reason.contains("could not be decoded"), "{reason}");
    worker.close().await;
}

#[tokio::test]
async fn manual_processing_with_get_next_job() {
    let ctx = Ctx::new("manual").await;
    let id = ctx.add("m", json!({"x": 1}), JobOptions::new()).await;
    let worker = ctx
        .worker(
            fast().autorun(false).name("manual".into()),
            |_job, _| async move { Ok(Value::Null) },
        )
        .await;
    let token = LockToken::new("my-token");
    let job = worker.get_next_job(&token, true).await.unwrap().unwrap();
    assert_eq!(job.id, id);
    worker
        .job(&job)
        .move_to_completed(&json!("by hand"), &token, false)
        .await
        .unwrap();
    assert_eq!(
        ctx.job(&id).await.return_value.as_deref(),
        Some("\"by hand\"")
    );
    assert_eq!(ctx.job(&id).await.processed_by.as_deref(), Some("manual"));
    assert!(worker.get_next_job(&token, false).await.unwrap().is_none());
    worker.close().await;
}

#[tokio::test]
async fn node_adds_rust_processes_and_node_sees_the_worker() {
    let ctx = Ctx::new("interop").await;
    let ok = ctx.node(&["add", "ok", r#"{"i":21}"#]);
    let fail = ctx.node(&[
        "add",
        "fail",
        r#"{"i":7}"#,
        r#"{"attempts":2,"backoff":{"type":"fixed","delay":10}}"#,
    ]);
    let worker = ctx
        .worker(fast().name("rust-w".into()), |job, _| async move {
            let i = job.data_as::<Value>()?["i"].as_i64().unwrap();
            match job.name.as_str() {
                "ok" => Ok(json!({"double": i * 2})),
                _ => Err(JobError::failed(format!("boom {i}"))),
            }
        })
        .await;
    let workers = ctx.node(&["getWorkers"]);
    assert!(workers.to_string().contains(":w:rust-w"), "{workers}");
    let ok = JobId::from(ok.as_str().unwrap());
    let fail = JobId::from(fail.as_str().unwrap());
    ctx.wait_state(&ok, JobState::Completed).await;
    ctx.wait_state(&fail, JobState::Failed).await;
    let node_ok = ctx.node_job(&ok);
    assert_eq!(node_ok["returnvalue"], json!({"double": 42}));
    assert_eq!(node_ok["attemptsMade"], 1);
    assert_eq!(ctx.job(&ok).await.processed_by.as_deref(), Some("rust-w"));
    let node_fail = ctx.node_job(&fail);
    assert_eq!(node_fail["failedReason"], "boom 7");
    assert_eq!(node_fail["attemptsMade"], 2);
    assert_eq!(node_fail["stacktrace"].as_array().unwrap().len(), 2);
    worker.close().await;
}

#[tokio::test]
async fn node_and_rust_workers_share_a_queue_exactly_once() {
    const TOTAL: usize = 2_000;
    let ctx = Ctx::new("race").await;
    let jobs: Vec<_> = (0..TOTAL)
        .map(|i| bullmq::BulkJob {
            name: "r".to_owned(),
            data: json!({"i": i}),
            opts: JobOptions::new(),
        })
        .collect();
    let rust_runs = Arc::new(AtomicUsize::new(0));
    let runs = Arc::clone(&rust_runs);
    let worker = ctx
        .worker(fast().concurrency(8), move |job, _| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(json!({"by": "rust", "i": job.data_as::<Value>()?["i"]}))
            }
        })
        .await;
    let (prefix, name) = (ctx.prefix.clone(), ctx.name.as_str().to_owned());
    let node = tokio::task::spawn_blocking(move || {
        support::run_node(
            "worker-race.mjs",
            &[
                ("PREFIX", &prefix),
                ("QUEUE", &name),
                ("TOTAL", &TOTAL.to_string()),
            ],
        )
    });
    ctx.queue.add_bulk(jobs).await.unwrap();
    let out = node.await.unwrap();
    let node_runs = serde_json::from_str::<Value>(out.trim()).unwrap()["processed"]
        .as_u64()
        .unwrap();
    worker.close().await;
    let rust_runs = rust_runs.load(Ordering::SeqCst);
    assert_eq!(
        usize::try_from(node_runs).unwrap() + rust_runs,
        TOTAL,
        "each job processed once"
    );
    assert!(
        rust_runs > 0 && node_runs > 0,
        "both took part: rust {rust_runs}, node {node_runs}"
    );
    let counts = ctx.node(&["counts"]);
    assert_eq!(counts["completed"], TOTAL);
    assert_eq!(counts["active"], 0);
    assert_eq!(counts["waiting"], 0);
}
