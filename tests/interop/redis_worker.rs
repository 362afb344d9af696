//! The Rust `Worker` beside Node.js BullMQ 6.7.6 workers (docs/RELIABILITY.md R22, issue 4):
//!
//! - Node.js adds the whole option corpus twice; a Node.js worker processes one copy and the
//!   Rust worker the other, with the same behaviour per job (results, failures retried under
//!   each backoff, unrecoverable errors, progress, logs, delays). Job hashes, logs and each
//!   job's event sequence must match.
//! - A Rust and a Node.js worker share one queue of 5,000 jobs: each completes exactly once.
//! - A job scheduler upserted by Node.js (`every`) and iterated by a Rust worker gives the
//!   iteration ids and run times a Node.js worker gives.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, CancellationToken, JobError, JobOptions, Prefix, ProcessResult, Queue, QueueName,
    Worker, WorkerOptions,
};
use serde_json::{Value, json};

use crate::support::now_ms;
use crate::support::scheduled::{members, until_completed, without_clock};

/// What the corpus's `progress` jobs do on every store: progress 50 %, two log lines, and
/// `"done"`.
pub(crate) async fn progress_and_logs<B: bullmq::backend::Backend>(
    job: &bullmq::ActiveJob<B>,
) -> ProcessResult {
    job.update_progress(&json!({"pct": 50})).await?;
    job.log("first line").await?;
    job.log("second line").await?;
    Ok(json!("done"))
}

async fn backend(prefix: &str, queue: &str) -> RedisBackend {
    let options = RedisOptions::new(support::redis_url()).prefix(Prefix::new(prefix).unwrap());
    RedisBackend::connect(&options, QueueName::new(queue).unwrap())
        .await
        .unwrap()
}

async fn raw() -> redis::aio::MultiplexedConnection {
    support::redis().await
}

async fn hash(key: &str) -> BTreeMap<String, String> {
    redis::cmd("HGETALL")
        .arg(key)
        .query_async(&mut raw().await)
        .await
        .unwrap()
}

/// Each job's events in the queue's stream, in order, as field maps.
async fn events_by_job(queue_key: &str) -> HashMap<String, Vec<BTreeMap<String, String>>> {
    let entries: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
        .arg(format!("{queue_key}:events"))
        .arg("-")
        .arg("+")
        .query_async(&mut raw().await)
        .await
        .unwrap();
    let mut by_job: HashMap<String, Vec<BTreeMap<String, String>>> = HashMap::new();
    for (_, fields) in entries {
        let map: BTreeMap<String, String> = fields
            .chunks(2)
            .map(|kv| (kv[0].clone(), kv[1].clone()))
            .collect();
        if let Some(id) = map.get("jobId") {
            by_job.entry(id.clone()).or_default().push(map);
        }
    }
    by_job
}

/// A Node.js process fed through stdin: it stops when stdin closes.
struct NodeWorker(Child);

impl NodeWorker {
    fn start(script: &str, env: &[(&str, &str)]) -> Self {
        let mut cmd = Command::new("node");
        cmd.arg(script)
            .current_dir(support::node_dir())
            .env("REDIS_URL", support::redis_url())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        Self(cmd.spawn().expect("run node (install Node.js 20)"))
    }

    /// Closes its stdin and waits for it to close its worker and exit.
    fn stop(mut self) -> String {
        drop(self.0.stdin.take());
        let status = self.0.wait().unwrap();
        let mut out = String::new();
        self.0
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let mut err = String::new();
        self.0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(status.success(), "node worker failed: {err}");
        out
    }
}

impl Drop for NodeWorker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

// The corpus, processed by each runtime ------------------------------------------------------

/// What the Rust processor does for a job, as worker-corpus.mjs does.
async fn corpus_processor(
    job: ActiveJob<RedisBackend>,
    _cancel: CancellationToken,
) -> ProcessResult {
    let data: Value = job.data_as()?;
    match data["behaviour"].as_str().unwrap_or_default() {
        "ok" => Ok(json!({"case": job.name, "i": data["i"]})),
        "progress" => progress_and_logs(&job).await,
        "flaky" if job.attempts_made < 2 => Err(JobError::failed(format!("boom {}", job.name))),
        "flaky" => Ok(json!({"recovered": job.attempts_made})),
        "fatal" => Err(JobError::unrecoverable("no retry")),
        "fail" => Err(JobError::failed("always")),
        other => Err(JobError::failed(format!("unexpected behaviour {other}"))),
    }
}

/// True once the job needs nothing more: finished, removed, or delayed far in the future.
fn settled(job: &BTreeMap<String, String>) -> bool {
    let far = job
        .get("delay")
        .and_then(|d| d.parse::<f64>().ok())
        .is_some_and(|d| d > 1e6);
    job.is_empty() || job.contains_key("finishedOn") || (far && !job.contains_key("processedOn"))
}

/// The job hash with what naturally differs between two runs taken out:
/// - `timestamp`, `processedOn`, `finishedOn`: clocks (only their presence is compared;
///   `timestamp` is kept when the case sets it);
/// - `stacktrace`: only each entry's first line (Node.js appends its own stack frames, Rust
///   has none to give);
/// - `delay` when the backoff has jitter (random by design).
fn normalized(
    mut job: BTreeMap<String, String>,
    given_timestamp: bool,
) -> BTreeMap<String, String> {
    for field in ["processedOn", "finishedOn"] {
        if let Some(v) = job.get_mut(field) {
            *v = "<time>".to_owned();
        }
    }
    if !given_timestamp && let Some(v) = job.get_mut("timestamp") {
        *v = "<time>".to_owned();
    }
    if let Some(trace) = job.get_mut("stacktrace") {
        let entries: Vec<String> = serde_json::from_str(trace).unwrap();
        let firsts: Vec<&str> = entries
            .iter()
            .map(|e| e.lines().next().unwrap_or_default())
            .collect();
        *trace = serde_json::to_string(&firsts).unwrap();
    }
    if job.get("opts").is_some_and(|o| o.contains("\"jitter\""))
        && let Some(v) = job.get_mut("delay")
    {
        *v = "<jitter>".to_owned();
    }
    job
}

/// One job's events without the stream ids, and without the due time of `delayed` events (a
/// clock reading).
fn normalized_events(events: &[BTreeMap<String, String>]) -> Vec<BTreeMap<String, String>> {
    events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if e.get("event").map(String::as_str) == Some("delayed") {
                e.remove("delay");
            }
            e
        })
        .collect()
}

/// The case a Node.js 6.7.6 worker cannot process: the job has `rjk` (a scheduler id) but no
/// `repeat` options, so advancing its scheduler throws (`upsertJobScheduler` destructures the
/// missing options), the worker emits "Failed to add repeatable job for next iteration" and
/// leaves the job active without running it, to stall and come back forever.
const NODE_STUCK: &str = "repeatjobkey-stripped";

/// Cases where the Rust worker is known to differ, with why. The test fails when one of them
/// stops differing, so that the entry is removed with the fix.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[];

#[tokio::test]
async fn node_added_corpus_processed_by_rust_matches_a_node_worker() {
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    let added: Value = serde_json::from_str(
        support::run_node(
            "worker-corpus.mjs",
            &[("MODE", "add"), ("PREFIX", &prefix), ("SIDES", "n,r")],
        )
        .trim(),
    )
    .unwrap();
    // (case, node queue, rust queue, job id): one queue per case and runtime.
    let cases: Vec<(String, String, String, String)> = added["n"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(case, at)| {
            let id = at[1].as_str().unwrap().to_owned();
            assert_eq!(
                added["r"][case][1],
                id.as_str(),
                "{case}: same id on both sides"
            );
            let rust_queue = added["r"][case][0].as_str().unwrap().to_owned();
            (
                case.clone(),
                at[0].as_str().unwrap().to_owned(),
                rust_queue,
                id,
            )
        })
        .collect();
    assert!(cases.len() > 60, "the whole corpus: {}", cases.len());

    let node = NodeWorker::start(
        "worker-corpus.mjs",
        &[("MODE", "work"), ("PREFIX", &prefix), ("SIDE", "n")],
    );
    let custom =
        |_attempts: u32, _job: &bullmq::Job, _message: &str| Some(Duration::from_millis(200));
    let mut workers = Vec::new();
    for (_, _, rust_queue, _) in &cases {
        let queue = Queue::try_new(
            QueueName::new(rust_queue.as_str()).unwrap(),
            backend(&prefix, rust_queue).await,
        )
        .expect("the backend is bound to this queue");
        let worker = Worker::builder(queue, corpus_processor)
            .options(
                WorkerOptions::new()
                    .name("corpus-w")
                    .drain_delay(Duration::from_millis(500)),
            )
            .backoff_strategy("my-custom-strategy", custom)
            .backoff_strategy("linear", custom)
            .build()
            .await
            .unwrap();
        workers.push(worker);
    }

    let key = |queue: &str| format!("{prefix}:{queue}");
    let deadline = Instant::now() + Duration::from_secs(25);
    loop {
        let mut pending = Vec::new();
        for (case, node_queue, rust_queue, id) in &cases {
            for queue in [node_queue, rust_queue] {
                if queue == node_queue && case == NODE_STUCK {
                    continue;
                }
                if !settled(&hash(&format!("{}:{id}", key(queue))).await) {
                    pending.push(format!("{case} in {queue}"));
                }
            }
        }
        if pending.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "not settled: {pending:?}");
        // Poll interval of a loop that names, when it gives up, what is still pending.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    node.stop();
    for worker in &workers {
        worker.close().await;
    }

    let con = raw().await;
    let mut differences = Vec::new();
    for (case, node_queue, rust_queue, id) in &cases {
        let (node_key, rust_key) = (key(node_queue), key(rust_queue));
        if case == NODE_STUCK {
            // Node.js never processes it (see NODE_STUCK); Rust reports the scheduler error
            // and runs the job.
            assert!(
                hash(&format!("{rust_key}:{id}"))
                    .await
                    .contains_key("finishedOn")
            );
            continue;
        }
        let theirs = hash(&format!("{node_key}:{id}")).await;
        let given_timestamp = theirs
            .get("opts")
            .is_some_and(|o| o.contains("\"timestamp\""));
        let theirs = normalized(theirs, given_timestamp);
        let ours = normalized(hash(&format!("{rust_key}:{id}")).await, given_timestamp);
        if theirs != ours {
            differences.push(format!("{case} hash:\n  node {theirs:?}\n  rust {ours:?}"));
        }
        let logs = |key: String| {
            let mut con = con.clone();
            async move {
                redis::cmd("LRANGE")
                    .arg(key)
                    .arg(0)
                    .arg(-1)
                    .query_async::<Vec<String>>(&mut con)
                    .await
                    .unwrap()
            }
        };
        let (node_logs, rust_logs) = (
            logs(format!("{node_key}:{id}:logs")).await,
            logs(format!("{rust_key}:{id}:logs")).await,
        );
        if node_logs != rust_logs {
            differences.push(format!(
                "{case} logs: node {node_logs:?} rust {rust_logs:?}"
            ));
        }
        let none = Vec::new();
        let (node_events, rust_events) = (
            events_by_job(&node_key).await,
            events_by_job(&rust_key).await,
        );
        let theirs = normalized_events(node_events.get(id).unwrap_or(&none));
        let ours = normalized_events(rust_events.get(id).unwrap_or(&none));
        if theirs != ours {
            differences.push(format!(
                "{case} events:\n  node {theirs:?}\n  rust {ours:?}"
            ));
        }
    }
    let mut known_seen = Vec::new();
    differences.retain(|d| {
        let case = d.split(' ').next().unwrap_or_default();
        let known = KNOWN_DIFFERENCES.iter().any(|(k, _)| *k == case);
        if known && !known_seen.contains(&case.to_owned()) {
            known_seen.push(case.to_owned());
        }
        !known
    });
    for (case, why) in KNOWN_DIFFERENCES {
        assert!(
            known_seen.iter().any(|c| c == case),
            "{case} no longer differs ({why}): remove it from KNOWN_DIFFERENCES"
        );
    }
    assert!(
        differences.is_empty(),
        "{} of {} cases differ:\n{}",
        differences.len(),
        cases.len(),
        differences.join("\n")
    );
}

// Rust and Node.js on one queue ---------------------------------------------------------------

#[tokio::test]
async fn rust_and_node_workers_complete_5000_jobs_exactly_once() {
    const TOTAL: usize = 5_000;
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    let queue = Queue::try_new(
        QueueName::new("race").unwrap(),
        backend(&prefix, "race").await,
    )
    .expect("the backend is bound to this queue");
    let rust_runs = Arc::new(AtomicUsize::new(0));
    let runs = Arc::clone(&rust_runs);
    let worker = Worker::new(
        QueueName::new("race").unwrap(),
        backend(&prefix, "race").await,
        WorkerOptions::new()
            .name("rust-racer")
            .concurrency(8)
            .drain_delay(Duration::from_millis(500)),
        move |job: ActiveJob<RedisBackend>, _| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(json!({"by": "rust", "i": job.data_as::<Value>()?["i"]}))
            }
        },
    )
    .await
    .unwrap();
    let key = format!("{prefix}:race");
    let node_prefix = prefix.clone();
    let node = tokio::task::spawn_blocking(move || {
        support::run_node(
            "worker-race.mjs",
            &[
                ("PREFIX", &node_prefix),
                ("QUEUE", "race"),
                ("TOTAL", &TOTAL.to_string()),
            ],
        )
    });
    // The jobs go in once Node's worker runs: ours alone could otherwise take them all while
    // Node.js starts.
    support::wait::eventually("the Node.js worker", Duration::from_secs(30), || async {
        let workers = queue.get_workers().await.unwrap();
        workers.iter().any(|w| w.name.ends_with(":w:node-racer"))
    })
    .await;
    for chunk in (0..TOTAL).collect::<Vec<_>>().chunks(1000) {
        let jobs = chunk
            .iter()
            .map(|i| bullmq::BulkJob {
                name: "r".to_owned(),
                data: json!({"i": i}),
                opts: JobOptions::new(),
            })
            .collect();
        queue.add_bulk(jobs).await.unwrap();
    }
    let out = node.await.unwrap();
    worker.close().await;
    let node_runs: usize = serde_json::from_str::<Value>(out.trim()).unwrap()["processed"]
        .as_u64()
        .unwrap()
        .try_into()
        .unwrap();
    let rust_runs = rust_runs.load(Ordering::SeqCst);
    assert_eq!(node_runs + rust_runs, TOTAL, "each job processed once");
    assert!(
        rust_runs > 0 && node_runs > 0,
        "both took part: rust {rust_runs}, node {node_runs}"
    );
    // Each job ran once in all (the counts add up) and at least once (it completed), so
    // exactly once; and its stored result names the runtime that ran it.
    let mut con = raw().await;
    let mut pipe = redis::pipe();
    for i in 1..=TOTAL {
        pipe.cmd("HMGET")
            .arg(format!("{key}:{i}"))
            .arg("returnvalue")
            .arg("data");
    }
    let values: Vec<(Option<String>, String)> = pipe.query_async(&mut con).await.unwrap();
    let mut by = HashMap::new();
    for (i, (value, data)) in values.iter().enumerate() {
        let value: Value = serde_json::from_str(value.as_deref().expect("completed")).unwrap();
        let data: Value = serde_json::from_str(data).unwrap();
        assert_eq!(value["i"], data["i"], "job {} ran with its own data", i + 1);
        *by.entry(value["by"].as_str().unwrap().to_owned())
            .or_insert(0usize) += 1;
    }
    assert_eq!(by.get("rust"), Some(&rust_runs));
    assert_eq!(by.get("node"), Some(&node_runs));
    let (wait, active, completed): (u64, u64, u64) = redis::pipe()
        .cmd("LLEN")
        .arg(format!("{key}:wait"))
        .cmd("LLEN")
        .arg(format!("{key}:active"))
        .cmd("ZCARD")
        .arg(format!("{key}:completed"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(
        (wait, active, completed),
        (0, 0, u64::try_from(TOTAL).unwrap())
    );
}

// Job schedulers ------------------------------------------------------------------------------

#[tokio::test]
async fn an_every_scheduler_iterated_by_rust_advances_as_with_a_node_worker() {
    const EVERY: u64 = 500;
    const COUNT: usize = 4;
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    // A start in the near future on a slot boundary: both schedules run at the same instants.
    let start = (now_ms() + 1_500).div_ceil(EVERY) * EVERY;
    let (every, start_text, count) = (EVERY.to_string(), start.to_string(), COUNT.to_string());
    support::run_node(
        "scheduler-every.mjs",
        &[
            ("MODE", "upsert"),
            ("PREFIX", &prefix),
            ("QUEUES", "n,r"),
            ("EVERY", &every),
            ("START", &start_text),
        ],
    );
    let node_prefix = prefix.clone();
    let node = tokio::task::spawn_blocking(move || {
        support::run_node(
            "scheduler-every.mjs",
            &[
                ("MODE", "work"),
                ("PREFIX", &node_prefix),
                ("QUEUE", "n"),
                ("COUNT", &count),
            ],
        )
    });
    let processed = Arc::new(AtomicUsize::new(0));
    let runs = Arc::clone(&processed);
    let worker = Worker::new(
        QueueName::new("r").unwrap(),
        backend(&prefix, "r").await,
        WorkerOptions::new()
            .name("sched-w")
            .drain_delay(Duration::from_millis(500)),
        move |_job: ActiveJob<RedisBackend>, _| {
            let runs = Arc::clone(&runs);
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(json!({"tick": true}))
            }
        },
    )
    .await
    .unwrap();
    let mut events = worker.events();
    let (node_key, rust_key) = (format!("{prefix}:n"), format!("{prefix}:r"));
    until_completed(&rust_key, COUNT, Duration::from_secs(15)).await;
    worker.close().await;
    let node_out: Value = serde_json::from_str(node.await.unwrap().trim()).unwrap();
    while let Ok(event) = events.try_recv() {
        assert!(
            !matches!(event, bullmq::WorkerEvent::Error(_)),
            "no error while advancing: {event:?}"
        );
    }

    let expected: Vec<String> = (0..=COUNT as u64)
        .map(|k| format!("repeat:sch:{}", start + k * EVERY))
        .collect();
    let node_done = members(&node_key, "completed").await;
    let rust_done = members(&rust_key, "completed").await;
    assert_eq!(node_done, expected[..COUNT], "{node_out}");
    assert_eq!(
        rust_done, node_done,
        "the same iterations, at the same run times"
    );
    assert_eq!(processed.load(Ordering::SeqCst), COUNT);
    let node_next = members(&node_key, "delayed").await;
    assert_eq!(node_next, expected[COUNT..]);
    assert_eq!(members(&rust_key, "delayed").await, node_next);
    for id in &expected {
        let theirs = without_clock(hash(&format!("{node_key}:{id}")).await);
        let ours = without_clock(hash(&format!("{rust_key}:{id}")).await);
        assert!(!theirs.is_empty(), "{id}");
        assert_eq!(ours, theirs, "iteration {id}");
    }
    let scheduler = |key: String| async move { hash(&format!("{key}:repeat:sch")).await };
    let theirs = scheduler(node_key.clone()).await;
    assert_eq!(theirs["ic"], (COUNT + 1).to_string());
    assert_eq!(scheduler(rust_key.clone()).await, theirs);
    let (node_next_score, rust_next_score): (f64, f64) = redis::pipe()
        .cmd("ZSCORE")
        .arg(format!("{node_key}:repeat"))
        .arg("sch")
        .cmd("ZSCORE")
        .arg(format!("{rust_key}:repeat"))
        .arg("sch")
        .query_async(&mut raw().await)
        .await
        .unwrap();
    assert_eq!(node_next_score, rust_next_score);
}
