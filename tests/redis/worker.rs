//! The Rust `Worker` on Redis only: a lock deleted under a running job, a job hash corrupted by
//! hand, and a Node.js BullMQ 6.7.6 worker on the same queue. Worker behaviour every store
//! shares is in the conformance suite (`tests/conformance/`).

#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, Error, JobError, JobId, JobOptions, JobState, Prefix, QueueName, WorkerEvent,
    WorkerOptions,
};
use serde_json::{Value, json};

use crate::support::redis_queue::RedisQueue;
use crate::support::stall_order::assert_a_job_taken_at_start_is_not_marked_stalled;
use crate::support::stalled::run_until;
use crate::support::wait::{eventually, next_event};

/// What these tests do on their queue (a [`RedisQueue`] on the shared server) besides [`RedisQueue`]'s own moves.
trait WorkerCtx {
    /// Adds a job; its id.
    async fn add(&self, name: &str, data: Value, opts: JobOptions) -> JobId;
    /// A job as Node.js's `Job#asJSON` gives it, with its JSON-text fields parsed back.
    fn node_job(&self, id: &JobId) -> Value;
    /// Node.js's answer to `queue-op.mjs <args…>` on this queue.
    fn node(&self, args: &[&str]) -> Value;
}

impl WorkerCtx for RedisQueue {
    async fn add(&self, name: &str, data: Value, opts: JobOptions) -> JobId {
        self.queue.add(name, &data, opts).await.unwrap().id
    }

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

/// How long a test waits for a state or an event.
const WAIT: Duration = Duration::from_secs(20);

fn fast() -> WorkerOptions {
    WorkerOptions::new().drain_delay(Duration::from_millis(500))
}

#[tokio::test]
async fn a_lost_lock_cancels_the_token_once_and_the_late_outcome_is_dropped() {
    let ctx = RedisQueue::shared("lost").await;
    let id = ctx.add("victim", json!({}), JobOptions::new()).await;
    let opts = fast()
        .lock_duration(Duration::from_millis(600))
        .skip_stalled_check(true);
    let seen = Arc::new(std::sync::Mutex::new(None));
    let reason = Arc::clone(&seen);
    let worker = ctx
        .worker(opts, move |job: ActiveJob<RedisBackend>, cancel| {
            let reason = Arc::clone(&reason);
            async move {
                tokio::select! {
                    () = cancel.cancelled() => {
                        *reason.lock().unwrap() = Some(job.cancel_reason());
                        // The processor's own error after a lost lock: reported nowhere.
                        Err(JobError::failed("gave up"))
                    }
                    // Fixed wait: simulates long work that cancellation cuts short.
                    () = tokio::time::sleep(Duration::from_secs(10)) => Ok(json!("not cancelled")),
                }
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
    eventually("the processor returned", WAIT, || async {
        seen.lock().unwrap().is_some()
    })
    .await;
    assert_eq!(
        *seen.lock().unwrap(),
        Some(Some(bullmq::CancelReason::LockLost))
    );
    // Closing waits for the job's task, so every event of this job has been sent by then.
    worker.close().await;
    while let Ok(e) = rx.try_recv() {
        assert!(
            !matches!(e, WorkerEvent::Error(_) | WorkerEvent::LockLost { .. }),
            "after one LockLost, nothing more is reported for the job: {e:?}"
        );
    }
    assert_eq!(
        ctx.state(&id).await,
        Some(JobState::Active),
        "left for the stalled check"
    );
    let job = ctx.job(&id).await;
    assert!(job.return_value.is_none());
    assert_eq!(job.failed_reason, None, "the late outcome was not recorded");
}

#[tokio::test]
async fn a_corrupt_job_is_failed_and_the_worker_goes_on() {
    let ctx = RedisQueue::shared("corrupt").await;
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
    run_until(
        &worker,
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
async fn node_adds_rust_processes_and_node_sees_the_worker() {
    let ctx = RedisQueue::shared("interop").await;
    let ok = ctx.node(&["add", "ok", r#"{"i":21}"#]);
    let fail = ctx.node(&[
        "add",
        "fail",
        r#"{"i":7}"#,
        r#"{"attempts":2,"backoff":{"type":"fixed","delay":10}}"#,
    ]);
    let worker = ctx
        .worker(fast().name("rust-w"), |job, _| async move {
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
    let ctx = RedisQueue::shared("race").await;
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
    // The jobs go in once Node's worker runs: ours alone could otherwise take them all while
    // Node.js starts.
    eventually("the Node.js worker", Duration::from_secs(30), || async {
        let workers = ctx.queue.get_workers().await.unwrap();
        workers.iter().any(|w| w.name.ends_with(":w:node-racer"))
    })
    .await;
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

#[tokio::test]
async fn a_job_taken_at_start_is_not_marked_stalled_by_the_first_check() {
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    let connect = |queue: String| {
        let prefix = prefix.clone();
        async move {
            let options =
                RedisOptions::new(support::redis_url()).prefix(Prefix::new(prefix).unwrap());
            RedisBackend::connect(&options, QueueName::new(queue).unwrap())
                .await
                .unwrap()
        }
    };
    let marked = |queue: String, id: JobId| {
        let stalled = format!("{prefix}:{queue}:stalled");
        async move {
            redis::cmd("SISMEMBER")
                .arg(&stalled)
                .arg(id.as_str())
                .query_async(&mut support::redis().await)
                .await
                .unwrap()
        }
    };
    assert_a_job_taken_at_start_is_not_marked_stalled(connect, marked).await;
}
