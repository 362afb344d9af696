//! The Rust classes on PostgreSQL beside Node.js BullMQ 6.7.6 on its own PostgreSQL backend
//! (`tests/node/pg-interop.mjs`), each test in a schema of its own that both runtimes migrate
//! (set `PGI_KEEP` to keep a failed test's schema):
//!
//! 1. jobs Node adds (attempts + backoff, priority, delay, lifo, custom id, removeOnComplete,
//!    unrecoverable) run by a Rust worker read back in Node as a Node worker leaves them (a
//!    twin queue run by Node is the reference: same run order, same views in Node and Rust,
//!    same stored rows), and jobs Rust adds run by a Node worker read back in Rust alike;
//! 2. flows added by either runtime run by the other's workers, children first, parents
//!    getting their children's values;
//! 3. job schedulers (`every` with a template; a bounded cron without) upserted by either
//!    runtime iterated by the other's worker, iterations stored alike whichever runtime added
//!    them (`opts` text, `"offset": null` included) and the queue meta written by each upsert;
//! 4. each runtime's `QueueEvents` reads the other's workers' events;
//! 5. counts, state lists and job fields read alike by both on one mixed queue, paused or not.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::backend::Range;
use bullmq::cron::{CronExpression, CronOptions};
use bullmq::flow::{FlowJob, FlowProducer};
use bullmq::job::JobType;
use bullmq::postgres::PostgresBackend;
use bullmq::postgres::sqlx;
use bullmq::scheduler::{JobScheduler, JobTemplate};
use bullmq::{
    ActiveJob, Backoff, CancellationToken, EventItem, Job, JobError, JobId, JobOptions, JobState,
    KeepJobs, ProcessResult, Queue, QueueEvent, QueueEvents, QueueEventsOptions, QueueName,
    RepeatOptions, Worker, WorkerEvent, WorkerOptions,
};
use bullmq_core::codec::{KeyStyle, options_to_value};
use serde_json::{Value, json};

use crate::support::counts::state_counts;
use crate::support::now_ms;
use crate::support::postgres::{SchemaGuard, database_url};
use crate::support::wait::eventually;

/// How long a test waits for jobs to settle.
const WAIT: Duration = Duration::from_secs(20);

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

/// The Rust workers' options: named like Node's (`interop-w`), one job at a time.
fn worker_options() -> WorkerOptions {
    WorkerOptions::new()
        .name("interop-w")
        .concurrency(1)
        .drain_delay(Duration::from_millis(500))
}

/// A schema no other test uses, dropped when the test ends (even when it fails), unless
/// `PGI_KEEP` is set (to look at a failed test's rows).
struct Schema(SchemaGuard);

impl Schema {
    fn new(tag: &str) -> Self {
        Self(SchemaGuard::new(&format!("pgi_{tag}")).kept_if("PGI_KEEP"))
    }

    fn name(&self) -> &str {
        self.0.as_str()
    }

    /// A new, migrated backend for `queue` (its own pool).
    async fn backend(&self, queue: &str) -> PostgresBackend {
        self.0.backend(queue).await
    }

    async fn queue(&self, queue: &str) -> Queue<PostgresBackend> {
        Queue::try_new(q(queue), self.backend(queue).await)
            .expect("the backend is bound to this queue")
    }

    /// A running Rust worker named like Node's (`interop-w`), one job at a time.
    async fn worker(&self, queue: &str) -> Worker<PostgresBackend, ProcessorFn> {
        Worker::new(
            q(queue),
            self.backend(queue).await,
            worker_options(),
            processor as ProcessorFn,
        )
        .await
        .unwrap()
    }

    /// Runs `node pg-interop.mjs <args…>` on `queue` off the async threads; its JSON output.
    async fn node(&self, queue: &str, args: &[&str]) -> Value {
        let args: Vec<String> = std::iter::once("pg-interop.mjs")
            .chain(args.iter().copied())
            .map(str::to_owned)
            .collect();
        let env = self.env(queue);
        let out = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            support::run_node_args(&args, &env)
        })
        .await
        .unwrap();
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("node printed {out:?}: {e}"))
    }

    fn env(&self, queue: &str) -> [(&'static str, String); 3] {
        [
            ("DATABASE_URL", database_url()),
            ("SCHEMA", self.name().to_owned()),
            ("QUEUE", queue.to_owned()),
        ]
    }
}

// The processor both runtimes run ---------------------------------------------------------

type ProcessorFut = std::pin::Pin<Box<dyn Future<Output = ProcessResult> + Send>>;
type ProcessorFn = fn(ActiveJob<PostgresBackend>, CancellationToken) -> ProcessorFut;

/// What pg-interop.mjs's `processor` does, by job name.
fn processor(job: ActiveJob<PostgresBackend>, _cancel: CancellationToken) -> ProcessorFut {
    Box::pin(async move {
        let data: Value = job.data_as()?;
        match job.name.as_str() {
            "ok" => Ok(json!({"double": data["i"].as_i64().unwrap_or(0) * 2})),
            "progress" => crate::redis_worker::progress_and_logs(&job).await,
            "flaky" if job.attempts_made < 2 => Err(JobError::failed(format!("boom {}", job.name))),
            "flaky" => Ok(json!({"recovered": job.attempts_made})),
            "fail" => Err(JobError::failed(format!("boom {}", data["i"]))),
            "fatal" => Err(JobError::unrecoverable("no retry")),
            _ => {
                let children = job.handle().get_children_values().await?;
                Ok(json!({"name": job.name, "children": children}))
            }
        }
    })
}

// Jobs as each runtime reads them ---------------------------------------------------------

/// A job as Rust reads it, in the shape pg-interop.mjs's `view` prints.
async fn rust_view(queue: &Queue<PostgresBackend>, job: &Job) -> Value {
    let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap();
    let state = queue.get_job_state(&job.id).await.unwrap();
    let logs = queue
        .get_job_logs(&job.id, Range::ALL_OLDEST_FIRST)
        .await
        .unwrap();
    json!({
        "id": job.id.as_str(),
        "name": job.name,
        "data": parse(&job.data),
        "opts": node_job_opts(options_to_value(&job.opts, KeyStyle::Long)),
        "progress": job.progress,
        "attemptsMade": job.attempts_made,
        "attemptsStarted": job.attempts_started,
        "stalledCounter": job.stalled_counter,
        "returnvalue": job.return_value.as_deref().map_or(Value::Null, parse),
        "failedReason": job.failed_reason,
        "stacktrace": job.stacktrace,
        "delay": u64::try_from(job.delay.as_millis()).unwrap(),
        "priority": job.priority,
        "timestamp": job.timestamp,
        "processedOn": job.processed_on,
        "finishedOn": job.finished_on,
        "processedBy": job.processed_by,
        "parentKey": job.parent_key,
        "repeatJobKey": job.repeat_job_key,
        "state": state.map_or("unknown", JobState::as_str),
        "logs": logs.logs,
    })
}

/// Options as Node's `Job` holds them: `{attempts: 0, ...opts}` without `repeatJobKey`
/// (which it keeps apart, as Rust's `Job` does).
fn node_job_opts(opts: Value) -> Value {
    let Value::Object(stored) = opts else {
        panic!("options are an object: {opts}")
    };
    let mut out = serde_json::Map::new();
    out.insert("attempts".to_owned(), json!(0));
    out.extend(stored.into_iter().filter(|(k, _)| k != "repeatJobKey"));
    Value::Object(out)
}

/// The rows of `sql` (two columns, its `$1` the queue) on `queue`.
async fn pairs<T>(schema: &Schema, queue: &str, sql: &'static str) -> Vec<(String, T)>
where
    T: Send + Unpin + for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    let backend = schema.backend(queue).await;
    sqlx::query_as(sql)
        .bind(queue)
        .fetch_all(backend.connection().pool())
        .await
        .unwrap()
}

/// Every stored column of a queue's jobs (`to_jsonb` of the row), keyed by id, without what
/// differs between two runs of the same jobs: clock readings and lock tokens (only whether
/// they are set is kept), the insertion sequence shared by all queues (only its sign: LIFO
/// jobs count down), the stalled checker's mark, and the stack frames under each trace's first
/// line.
async fn stored_rows(schema: &Schema, queue: &str) -> BTreeMap<String, Value> {
    let rows: Vec<(String, Value)> = pairs(
        schema,
        queue,
        "SELECT id, to_jsonb(j) FROM job j WHERE queue = $1",
    )
    .await;
    rows.into_iter()
        .map(|(id, mut row)| {
            let map = row.as_object_mut().unwrap();
            map.remove("queue");
            // The stalled checker's mark for its next pass: set on whatever was active when
            // a worker's first check ran, a matter of timing.
            map.remove("stalled_marked");
            for field in [
                "added_at_ms",
                "process_at_ms",
                "processed_at_ms",
                "finished_at_ms",
                "lock_token",
                "locked_until_ms",
            ] {
                let set = !map[field].is_null();
                map.insert(field.to_owned(), json!(set));
            }
            let seq = map["seq"].as_i64().unwrap();
            map.insert("seq".to_owned(), json!(seq.signum()));
            if let Some(trace) = map["stacktrace"].as_array_mut() {
                for entry in trace {
                    *entry = json!(entry.as_str().unwrap().lines().next().unwrap_or_default());
                }
            }
            (id, row)
        })
        .collect()
}

/// Rust's views of `ids` (`null` for a job that is gone), keyed by id.
async fn rust_views(queue: &Queue<PostgresBackend>, ids: &[String]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for id in ids {
        let view = match queue.get_job(&JobId::from(id.as_str())).await.unwrap() {
            Some(job) => rust_view(queue, &job).await,
            None => Value::Null,
        };
        out.insert(id.clone(), view);
    }
    out
}

/// Node's views of `ids` on `queue`, keyed by id.
async fn node_views(schema: &Schema, queue: &str, ids: &[String]) -> BTreeMap<String, Value> {
    serde_json::from_value(schema.node(queue, &["view", &json!(ids).to_string()]).await).unwrap()
}

/// A view without what differs between two runs of the same jobs: clock readings (only
/// whether they are set is kept) and the stack frames under each stack trace's first line
/// (Node appends its own, Rust has none).
fn without_clocks(mut view: Value) -> Value {
    if let Some(map) = view.as_object_mut() {
        map.remove("timestamp");
        for field in ["processedOn", "finishedOn"] {
            let set = !map[field].is_null();
            map.insert(field.to_owned(), json!(set));
        }
        let firsts: Vec<Value> = map["stacktrace"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| json!(e.as_str().unwrap().lines().next().unwrap_or_default()))
            .collect();
        map.insert("stacktrace".to_owned(), Value::Array(firsts));
    }
    view
}

fn ids(value: &Value) -> Vec<String> {
    serde_json::from_value(value.clone()).unwrap()
}

/// Every state, in the order `pg-interop.mjs` lists them (its `STATES`).
const STATES: [JobState; 7] = [
    JobState::Waiting,
    JobState::Active,
    JobState::Delayed,
    JobState::Prioritized,
    JobState::Completed,
    JobState::Failed,
    JobState::WaitingChildren,
];

/// Every job of the queue finished: nothing waiting, delayed, prioritized or active, and
/// `finished` jobs completed or failed.
async fn settled(queue: &Queue<PostgresBackend>, finished: u64) -> bool {
    // Parents waiting for their children are not counted: only the jobs that run.
    let n = state_counts(queue, &STATES[..6]).await;
    n[..4].iter().all(|n| *n == 0) && n[4] + n[5] == finished
}

/// Ids in the order they first appear.
fn first_runs(started: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in started {
        if !out.contains(id) {
            out.push(id.clone());
        }
    }
    out
}

/// A worker that records the ids it starts, in order.
async fn recording_worker(
    schema: &Schema,
    queue: &str,
    started: Arc<Mutex<Vec<String>>>,
) -> Worker<
    PostgresBackend,
    impl Fn(ActiveJob<PostgresBackend>, CancellationToken) -> ProcessorFut + Send + Sync + 'static,
> {
    Worker::new(
        q(queue),
        schema.backend(queue).await,
        worker_options(),
        move |job: ActiveJob<PostgresBackend>, cancel| {
            started.lock().unwrap().push(job.id.to_string());
            processor(job, cancel)
        },
    )
    .await
    .unwrap()
}

// 1. Jobs across runtimes -----------------------------------------------------------------

/// Runs queue `n` with a Node worker and queue `r` (read through `queue`) with a recording
/// Rust worker until the Rust one has settled the job set; what Node's run printed and the
/// ids the Rust worker started, in order.
async fn run_twins(schema: &Schema, queue: &Queue<PostgresBackend>) -> (Value, Vec<String>) {
    let started = Arc::new(Mutex::new(Vec::new()));
    let (node_run, worker) = tokio::join!(
        schema.node("n", &["work", "8"]),
        recording_worker(schema, "r", Arc::clone(&started))
    );
    eventually("the Rust worker settled its queue", WAIT, || {
        settled(queue, 7)
    })
    .await;
    worker.close().await;
    let started = started.lock().unwrap().clone();
    (node_run, started)
}

/// Both workers ran the set's ready jobs (`n`'s and `r`'s ids) in the expected order.
fn assert_run_orders(node_started: &[String], rust_started: &[String], n: &[String], r: &[String]) {
    let delayed = &r[2];
    let order = |runs: &[String]| -> Vec<String> {
        first_runs(runs)
            .into_iter()
            .filter(|id| id != delayed)
            .collect()
    };
    assert_eq!(order(node_started), expected_first_runs(n), "Node's order");
    assert_eq!(order(rust_started), expected_first_runs(r), "Rust's order");
}

/// Each job of `a` (keyed by the ids `ids`) reads as its twin in `b`, clocks aside.
fn assert_alike_but_clocks(
    a: &BTreeMap<String, Value>,
    b: &BTreeMap<String, Value>,
    ids: &[String],
) {
    for id in ids {
        assert_eq!(
            without_clocks(a[id].clone()),
            without_clocks(b[id].clone()),
            "job {id}"
        );
    }
}

/// The rows themselves: every column of queue `other`'s jobs as the reference worker left its
/// twin in queue `reference` (7 jobs).
async fn assert_rows_alike(schema: &Schema, reference: &str, other: &str) {
    let (reference_rows, other_rows) = (
        stored_rows(schema, reference).await,
        stored_rows(schema, other).await,
    );
    assert_eq!(reference_rows.len(), 7);
    for (id, row) in &reference_rows {
        assert_eq!(other_rows[id], *row, "job {id} as stored");
    }
    assert_eq!(other_rows.len(), reference_rows.len());
}

/// The job set of the worker tests: (name, data, Node options), finishing as 6 completed (one
/// of them removed on completion) and 2 failed: 7 jobs left in all.
fn job_set() -> Vec<Value> {
    vec![
        json!({"name": "flaky", "data": {"i": 1}, "opts": {"attempts": 3, "backoff": {"type": "fixed", "delay": 100}}}),
        json!({"name": "ok", "data": {"i": 2}, "opts": {"priority": 5}}),
        json!({"name": "ok", "data": {"i": 3}, "opts": {"delay": 400}}),
        json!({"name": "ok", "data": {"i": 4}, "opts": {"lifo": true}}),
        json!({"name": "progress", "data": {"i": 5}, "opts": {"jobId": "custom-5"}}),
        json!({"name": "ok", "data": {"i": 6}, "opts": {"removeOnComplete": true}}),
        json!({"name": "fail", "data": {"i": 7}, "opts": {"attempts": 2, "backoff": {"type": "exponential", "delay": 50}}}),
        json!({"name": "fatal", "data": {"i": 8}, "opts": {"attempts": 4}}),
    ]
}

/// The same set as Rust options.
fn rust_job_set() -> Vec<(&'static str, Value, JobOptions)> {
    let o = JobOptions::new;
    vec![
        (
            "flaky",
            json!({"i": 1}),
            o().attempts(3)
                .backoff(Backoff::fixed(Duration::from_millis(100))),
        ),
        ("ok", json!({"i": 2}), o().priority(5)),
        ("ok", json!({"i": 3}), o().delay(Duration::from_millis(400))),
        ("ok", json!({"i": 4}), o().lifo(true)),
        ("progress", json!({"i": 5}), o().job_id("custom-5")),
        (
            "ok",
            json!({"i": 6}),
            o().remove_on_complete(KeepJobs::RemoveAll),
        ),
        (
            "fail",
            json!({"i": 7}),
            o().attempts(2)
                .backoff(Backoff::exponential(Duration::from_millis(50))),
        ),
        ("fatal", json!({"i": 8}), o().attempts(4)),
    ]
}

/// Runs of the set's ready jobs in queue order (the delayed job, index 2, left out: when it
/// comes due depends on the clock): the lifo job, the plain ones in order, then the
/// prioritized one.
fn expected_first_runs(ids: &[String]) -> Vec<String> {
    [3, 0, 4, 5, 6, 7, 1]
        .iter()
        .map(|i| ids[*i].clone())
        .collect()
}

/// Checks what one runtime's processing of the job set left, as `views` (either runtime's
/// reading) show it.
fn check_set(views: &BTreeMap<String, Value>, ids: &[String], who: &str) {
    let v = |i: usize| &views[&ids[i]];
    assert_eq!(ids[4], "custom-5");
    let flaky = v(0);
    assert_eq!(flaky["state"], "completed", "{who}: {flaky}");
    assert_eq!(flaky["returnvalue"], json!({"recovered": 2}), "{who}");
    assert_eq!(
        (&flaky["attemptsMade"], &flaky["attemptsStarted"]),
        (&json!(3), &json!(3)),
        "{who}"
    );
    assert_eq!(flaky["failedReason"], "boom flaky", "{who}");
    assert_eq!(flaky["stacktrace"].as_array().unwrap().len(), 2, "{who}");
    assert_eq!(v(1)["returnvalue"], json!({"double": 4}), "{who}");
    assert_eq!(v(1)["priority"], 5, "{who}");
    assert_eq!(v(2)["returnvalue"], json!({"double": 6}), "{who}");
    assert!(
        v(2)["processedOn"].as_u64().unwrap() >= v(2)["timestamp"].as_u64().unwrap() + 400,
        "{who}: ran early"
    );
    assert_eq!(v(3)["returnvalue"], json!({"double": 8}), "{who}");
    let progress = v(4);
    assert_eq!(progress["progress"], json!({"pct": 50}), "{who}");
    assert_eq!(
        progress["logs"],
        json!(["first line", "second line"]),
        "{who}"
    );
    assert_eq!(progress["returnvalue"], "done", "{who}");
    assert_eq!(progress["processedBy"], "interop-w", "{who}");
    assert_eq!(*v(5), Value::Null, "{who}: removed on completion");
    let fail = v(6);
    assert_eq!(fail["state"], "failed", "{who}");
    assert_eq!(fail["failedReason"], "boom 7", "{who}");
    assert_eq!(fail["attemptsMade"], 2, "{who}");
    let trace = fail["stacktrace"].as_array().unwrap();
    assert_eq!(trace.len(), 2, "{who}");
    assert!(
        trace[0].as_str().unwrap().starts_with("Error: boom 7"),
        "{who}: {trace:?}"
    );
    let fatal = v(7);
    assert_eq!(fatal["state"], "failed", "{who}");
    assert_eq!(fatal["failedReason"], "no retry", "{who}");
    assert_eq!(fatal["attemptsMade"], 1, "{who}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_jobs_run_by_rust_read_back_in_node_as_a_node_worker_leaves_them() {
    let schema = Schema::new("n2r");
    let set = json!(job_set()).to_string();
    // Twin queues: `n` is run by a Node worker (the reference), `r` by the Rust worker.
    let args = ["add", set.as_str()];
    let (n, r) = tokio::join!(schema.node("n", &args), schema.node("r", &args));
    let (n, r) = (ids(&n), ids(&r));
    assert_eq!(n, r, "the same ids in both queues");
    let queue = schema.queue("r").await;
    let (node_run, rust_started) = run_twins(&schema, &queue).await;

    // Both ran the ready jobs in the same order.
    let node_started = ids(&node_run["started"]);
    assert_run_orders(&node_started, &rust_started, &n, &r);
    assert_eq!(
        rust_started.len(),
        node_started.len(),
        "as many runs: node {node_started:?}, rust {rust_started:?}"
    );

    // Node reads the Rust-run jobs as it reads the Node-run ones.
    let theirs = node_views(&schema, "n", &n).await;
    let ours = node_views(&schema, "r", &r).await;
    check_set(&theirs, &n, "node worker, read by node");
    check_set(&ours, &r, "rust worker, read by node");
    assert_alike_but_clocks(&ours, &theirs, &n);
    // And Rust reads every field as Node does.
    let rust = rust_views(&queue, &r).await;
    for id in &r {
        assert_eq!(rust[id], ours[id], "job {id} read by Rust and by Node");
    }
    // The rows themselves: every column as the Node worker left its twin.
    assert_rows_alike(&schema, "n", "r").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_jobs_run_by_node_read_back_in_rust_as_a_rust_worker_leaves_them() {
    let schema = Schema::new("r2n");
    let (node_queue, rust_queue) = (schema.queue("n").await, schema.queue("r").await);
    let mut n = Vec::new();
    let mut r = Vec::new();
    for (name, data, opts) in rust_job_set() {
        n.push(
            node_queue
                .add(name, &data, opts.clone())
                .await
                .unwrap()
                .id
                .to_string(),
        );
        r.push(
            rust_queue
                .add(name, &data, opts)
                .await
                .unwrap()
                .id
                .to_string(),
        );
    }
    assert_eq!(n, r);
    let (node_run, rust_started) = run_twins(&schema, &rust_queue).await;
    assert!(
        settled(&node_queue, 7).await,
        "the Node worker settled its queue"
    );
    assert_run_orders(&ids(&node_run["started"]), &rust_started, &n, &r);

    // Rust reads the Node-run jobs (results, failures, traces, attempts) as the Rust-run ones.
    let theirs = rust_views(&node_queue, &n).await;
    let ours = rust_views(&rust_queue, &r).await;
    check_set(&theirs, &n, "node worker, read by rust");
    check_set(&ours, &r, "rust worker, read by rust");
    assert_alike_but_clocks(&theirs, &ours, &n);
    let node_read = node_views(&schema, "n", &n).await;
    for id in &n {
        assert_eq!(
            theirs[id], node_read[id],
            "job {id} read by Rust and by Node"
        );
    }
    // The rows themselves: every column as the Rust worker left its twin.
    assert_rows_alike(&schema, "r", "n").await;
    // Node's stack traces reach Rust whole.
    let trace = theirs[&n[6]]["stacktrace"][0].as_str().unwrap().to_owned();
    let full = node_queue
        .get_job(&JobId::from(n[6].as_str()))
        .await
        .unwrap()
        .unwrap();
    assert!(full.stacktrace[0].contains("pg-interop.mjs"), "{trace}");
}

// 2. Flows ----------------------------------------------------------------------------------

/// The tree both runtimes add: `root` in `parents`, `mid` (with a child `leaf`) and `sib` in
/// `kids`.
fn tree_json() -> Value {
    json!({
        "queueName": "parents", "name": "root", "data": {"r": 1},
        "children": [
            {"queueName": "kids", "name": "mid", "data": {"m": 2},
             "children": [{"queueName": "kids", "name": "leaf", "data": {}}]},
            {"queueName": "kids", "name": "sib", "data": {}},
        ]
    })
}

fn tree_rust() -> FlowJob {
    FlowJob::new(q("parents"), "root", json!({"r": 1}))
        .child(
            FlowJob::new(q("kids"), "mid", json!({"m": 2})).child(FlowJob::new(
                q("kids"),
                "leaf",
                json!({}),
            )),
        )
        .child(FlowJob::new(q("kids"), "sib", json!({})))
}

/// Checks a finished tree: each parent's return value holds its children's, under their
/// keys, and ran after them. `key(path)` is the qualified key of the node at `path`.
async fn check_tree(schema: &Schema, key: impl Fn(&[usize]) -> String) {
    let (parents, kids) = (schema.queue("parents").await, schema.queue("kids").await);
    async fn job(queue: &Queue<PostgresBackend>, key: String) -> Job {
        let id = key.rsplit(':').next().unwrap();
        queue.get_job(&JobId::from(id)).await.unwrap().unwrap()
    }
    let root = job(&parents, key(&[])).await;
    let mid = job(&kids, key(&[0])).await;
    let leaf = job(&kids, key(&[0, 0])).await;
    let sib = job(&kids, key(&[1])).await;
    let value =
        |j: &Job| serde_json::from_str::<Value>(j.return_value.as_deref().unwrap()).unwrap();
    let leaf_value = json!({"name": "leaf", "children": {}});
    assert_eq!(value(&leaf), leaf_value);
    let mid_value = json!({"name": "mid", "children": {key(&[0, 0]): leaf_value}});
    assert_eq!(value(&mid), mid_value);
    let sib_value = json!({"name": "sib", "children": {}});
    assert_eq!(value(&sib), sib_value);
    assert_eq!(
        value(&root),
        json!({"name": "root", "children": {key(&[0]): mid_value, key(&[1]): sib_value}})
    );
    assert!(leaf.finished_on <= mid.processed_on, "children first");
    assert!(mid.finished_on <= root.processed_on && sib.finished_on <= root.processed_on);
    assert_eq!(mid.parent_key.as_deref(), Some(key(&[]).as_str()));
    assert_eq!(leaf.parent_key.as_deref(), Some(key(&[0]).as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_flow_runs_on_rust_workers_children_first() {
    let schema = Schema::new("nflow");
    let tree = schema
        .node("parents", &["flow-add", &tree_json().to_string()])
        .await;
    let key = |path: &[usize]| {
        let mut node = &tree;
        for i in path {
            node = &node["children"][*i];
        }
        format!(
            "{}:{}",
            node["queue"].as_str().unwrap(),
            node["id"].as_str().unwrap()
        )
    };
    let parents = schema.queue("parents").await;
    let root = JobId::from(tree["id"].as_str().unwrap());
    assert_eq!(
        parents.get_job_state(&root).await.unwrap(),
        Some(JobState::WaitingChildren)
    );
    let w1 = schema.worker("parents").await;
    let w2 = schema.worker("kids").await;
    eventually("the root completed", WAIT, || async {
        parents.get_job_state(&root).await.unwrap() == Some(JobState::Completed)
    })
    .await;
    w1.close().await;
    w2.close().await;
    check_tree(&schema, key).await;
    // Node reads the root's result as Rust left it.
    let node_read = node_views(&schema, "parents", &[root.to_string()]).await;
    let rust_read = rust_views(&parents, &[root.to_string()]).await;
    assert_eq!(node_read, rust_read);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_flow_runs_on_node_workers_children_first() {
    let schema = Schema::new("rflow");
    let producer = FlowProducer::new(schema.backend("parents").await);
    let tree = producer.add(tree_rust()).await.unwrap();
    let key = |path: &[usize]| {
        let mut node = &tree;
        for i in path {
            node = &node.children[*i];
        }
        // On PostgreSQL a job's key is `<queue>:<id>` (the schema is the namespace).
        format!("{}:{}", node.queue.as_str(), node.job.id)
    };
    let run = schema
        .node("parents", &["flow-work", "parents,kids", "4"])
        .await;
    assert_eq!(run["finished"], 4);
    check_tree(&schema, key).await;
    let parents = schema.queue("parents").await;
    let root = [tree.job.id.to_string()];
    assert_eq!(
        node_views(&schema, "parents", &root).await,
        rust_views(&parents, &root).await
    );
    producer.close().await.unwrap();
}

// 3. Job schedulers ---------------------------------------------------------------------------

/// Wide enough that a worker slowed by a loaded machine does not skip a slot.
const EVERY: u64 = 1_000;
const ITERATIONS: usize = 3;

/// A start on a slot boundary far enough ahead for Node's upsert and worker to start first.
fn start_after(lead: u64) -> u64 {
    (now_ms() + lead).div_ceil(EVERY) * EVERY
}

/// Completed ids, oldest first.
async fn completed_ids(queue: &Queue<PostgresBackend>) -> Vec<String> {
    let jobs = queue
        .get_jobs(
            &[JobType::State(JobState::Completed)],
            Range::ALL_OLDEST_FIRST,
        )
        .await
        .unwrap();
    jobs.iter().map(|j| j.id.to_string()).collect()
}

/// The stored `opts` of the queue's jobs as PostgreSQL prints them (`opts::text`), by id, with
/// the iteration's own clock readings (`timestamp`, `delay`) set to 0.
async fn opts_text(schema: &Schema, queue: &str) -> BTreeMap<String, String> {
    let sql = "SELECT id, (opts || '{\"timestamp\": 0, \"delay\": 0}')::text FROM job \
               WHERE queue = $1";
    pairs(schema, queue, sql).await.into_iter().collect()
}

/// The queue's `meta` rows.
async fn meta_rows(schema: &Schema, queue: &str) -> BTreeMap<String, String> {
    let sql = "SELECT field, value FROM meta WHERE queue = $1";
    pairs(schema, queue, sql).await.into_iter().collect()
}

/// The schedules of the scheduler tests.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `every` from a start date, with a template.
    Every,
    /// A cron pattern with a `limit`, a time zone and start and end dates; no template.
    CronBounded,
}

/// Queue `n`: upserted by Node, iterated by a Rust worker; queue `r`: upserted by Rust,
/// iterated by a Node worker; the same schedule from the same start. Both run the schedule's
/// slots (`repeat:sch:<start + k * every>`), none early, and store each iteration alike
/// whichever runtime added it (Node's upsert and Rust's worker add `n`'s, the other way round
/// in `r`): the same `opts` text, `"offset": null` in `repeat` included, and the same queue
/// meta after each runtime's upsert.
async fn schedulers_iterated_by_the_other(kind: Kind) {
    let schema = Schema::new("sched");
    let start = start_after(2_500);
    let (repeat, template, schedule, rust_template) = match kind {
        Kind::Every => (
            json!({"every": EVERY, "startDate": start}),
            json!({"name": "tick", "data": {"k": 1}}),
            RepeatOptions::every(Duration::from_millis(EVERY)).start_date(start),
            JobTemplate::named("tick").data(json!({"k": 1})),
        ),
        Kind::CronBounded => (
            json!({"pattern": "*/1 * * * * *", "limit": 10, "tz": "Europe/London",
                   "startDate": start, "endDate": start + 3_600_000}),
            Value::Null,
            RepeatOptions::cron("*/1 * * * * *")
                .limit(10)
                .tz("Europe/London")
                .start_date(start)
                .end_date(start + 3_600_000),
            JobTemplate::default(),
        ),
    };
    let (name, data) = match kind {
        Kind::Every => (json!("tick"), json!({"k": 1})),
        Kind::CronBounded => (json!("sch"), json!({})),
    };
    let (repeat, template) = (repeat.to_string(), template.to_string());
    let schedulers = JobScheduler::new(schema.backend("r").await);
    let upsert = ["upsert", "sch", repeat.as_str(), template.as_str()];
    let (node_first, rust_first) = tokio::join!(
        schema.node("n", &upsert),
        schedulers.upsert("sch", &schedule, rust_template),
    );
    let slots: Vec<u64> = match kind {
        Kind::Every => (0..=ITERATIONS as u64).map(|k| start + k * EVERY).collect(),
        Kind::CronBounded => {
            let options = CronOptions::new()
                .tz("Europe/London")
                .current_date(start)
                .start_date(start);
            CronExpression::parse("*/1 * * * * *", &options)
                .unwrap()
                .take(ITERATIONS + 1)
        }
    };
    let expected: Vec<String> = slots.iter().map(|m| format!("repeat:sch:{m}")).collect();
    assert_eq!(node_first["id"], expected[0].as_str());
    assert_eq!(rust_first.unwrap().unwrap().id.as_str(), expected[0]);
    let meta = meta_rows(&schema, "n").await;
    assert_eq!(meta["version"], "bullmq:6.7.6");
    assert_eq!(
        meta_rows(&schema, "r").await,
        meta,
        "meta after each upsert"
    );
    let n = schema.queue("n").await;
    let rust_worker = schema.worker("n").await;
    let mut events = rust_worker.events();
    let node_run = schema
        .node("r", &["sched-work", &ITERATIONS.to_string()])
        .await;
    eventually("the Rust worker ran three iterations", WAIT, || async {
        completed_ids(&n).await.len() >= ITERATIONS
    })
    .await;
    rust_worker.close().await;
    while let Ok(event) = events.try_recv() {
        assert!(
            !matches!(event, WorkerEvent::Error(_)),
            "no error while advancing: {event:?}"
        );
    }
    assert_eq!(node_run["errors"], json!([]));
    assert_eq!(ids(&node_run["processed"]), expected[..ITERATIONS]);
    let r = schema.queue("r").await;
    for (queue, queue_name) in [(&n, "n"), (&r, "r")] {
        assert_eq!(
            completed_ids(queue).await,
            expected[..ITERATIONS],
            "queue {queue_name}"
        );
        let delayed = queue.get_delayed(Range::ALL).await.unwrap();
        let delayed: Vec<String> = delayed.iter().map(|j| j.id.to_string()).collect();
        assert_eq!(delayed, expected[ITERATIONS..], "queue {queue_name}");
        let record = JobScheduler::new(schema.backend(queue_name).await)
            .get("sch")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            record.iteration_count,
            (ITERATIONS + 1) as u64,
            "{queue_name}: {record:?}"
        );
        assert_eq!(record.next_millis, Some(slots[ITERATIONS]), "{queue_name}");
    }
    // Both read each iteration alike, in both queues.
    for (queue, queue_name) in [(&n, "n"), (&r, "r")] {
        let rust = rust_views(queue, &expected).await;
        let node = node_views(&schema, queue_name, &expected).await;
        for (k, id) in expected.iter().enumerate() {
            let view = &rust[id];
            assert_eq!(view["repeatJobKey"], "sch", "{queue_name} {id}");
            assert_eq!((&view["name"], &view["data"]), (&name, &data));
            if k < ITERATIONS {
                let ran = view["processedOn"].as_u64().unwrap();
                assert!(ran >= slots[k], "{queue_name} {id} ran early");
            } else {
                assert_eq!(view["state"], "delayed", "{queue_name} {id}");
            }
            assert_eq!(view, &node[id], "{queue_name} {id} read by Rust and Node");
        }
    }
    let n_rows = stored_rows(&schema, "n").await;
    let r_rows = stored_rows(&schema, "r").await;
    for id in &expected {
        let differ = |mut row: Value| {
            // The iteration's own clock readings.
            for field in ["delay", "timestamp"] {
                row["opts"].as_object_mut().unwrap().remove(field);
            }
            row.as_object_mut().unwrap().remove("delay_ms");
            row["return_value"] = Value::Null;
            row["processed_by"] = Value::Null;
            row
        };
        assert_eq!(
            differ(r_rows[id].clone()),
            differ(n_rows[id].clone()),
            "iteration {id} as stored by each runtime"
        );
    }
    let n_text = opts_text(&schema, "n").await;
    let r_text = opts_text(&schema, "r").await;
    assert_eq!(r_text, n_text, "the stored options, as text");
    assert!(
        n_text[&expected[0]].contains(r#""offset": null"#),
        "{n_text:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_schedulers_upserted_by_one_runtime_are_iterated_by_the_other() {
    schedulers_iterated_by_the_other(Kind::Every).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounded_cron_schedulers_without_template_are_iterated_by_the_other() {
    schedulers_iterated_by_the_other(Kind::CronBounded).await;
}

// 4. Events -----------------------------------------------------------------------------------

/// The jobs of the event tests: one completes, one reports progress and logs, one fails.
fn event_jobs() -> Vec<(&'static str, Value, JobOptions)> {
    vec![
        ("ok", json!({"i": 1}), JobOptions::new()),
        ("progress", json!({}), JobOptions::new()),
        ("fail", json!({"i": 2}), JobOptions::new()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_queue_events_see_a_node_workers_events() {
    let schema = Schema::new("rev");
    let queue = schema.queue("ev").await;
    let events = QueueEvents::new(schema.backend("ev").await, QueueEventsOptions::new()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), events.wait_until_ready())
        .await
        .expect("ready in time")
        .unwrap();
    let mut sub = events.subscribe();
    let mut added = Vec::new();
    for (name, data, opts) in event_jobs() {
        added.push(queue.add(name, &data, opts).await.unwrap().id);
    }
    let run = schema.node("ev", &["work", "3"]).await;
    assert_eq!(run["finished"], 3);
    let mut seen = Vec::new();
    let mut finished = 0;
    while finished < 3 {
        let item = tokio::time::timeout(WAIT, sub.recv())
            .await
            .unwrap_or_else(|_| panic!("no more events; got {seen:#?}"))
            .unwrap();
        let EventItem::Event(event) = item else {
            panic!("{item:?}")
        };
        let line = match &event.event {
            QueueEvent::Added { job_id, name } => format!("added {job_id} {name}"),
            QueueEvent::Active { job_id, prev } => format!("active {job_id} {prev:?}"),
            QueueEvent::Progress { job_id, data } => format!("progress {job_id} {data}"),
            QueueEvent::Completed {
                job_id,
                returnvalue,
                ..
            } => format!("completed {job_id} {returnvalue}"),
            QueueEvent::Failed {
                job_id,
                failed_reason,
                ..
            } => format!("failed {job_id} {failed_reason}"),
            _ => continue,
        };
        if matches!(
            event.event,
            QueueEvent::Completed { .. } | QueueEvent::Failed { .. }
        ) {
            finished += 1;
        }
        seen.push(line);
    }
    events.close().await;
    let [ok, progress, fail] = [&added[0], &added[1], &added[2]];
    let active = |id: &JobId| format!("active {id} Some(\"waiting\")");
    assert_eq!(
        seen,
        [
            format!("added {ok} ok"),
            format!("added {progress} progress"),
            format!("added {fail} fail"),
            active(ok),
            format!("completed {ok} {}", json!({"double": 2})),
            active(progress),
            format!("progress {progress} {}", json!({"pct": 50})),
            format!("completed {progress} \"done\""),
            active(fail),
            format!("failed {fail} boom 2"),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_queue_events_see_a_rust_workers_events() {
    let schema = Schema::new("nev");
    let queue = schema.queue("ev").await;
    // Node's QueueEvents, reading from the first event, live while Rust works.
    let mut cmd = Command::new("node");
    cmd.args(["pg-interop.mjs", "listen", "3"])
        .current_dir(support::node_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in schema.env("ev") {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run node (install Node.js 20)");
    let stdout = child.stdout.take().unwrap();
    let (ready, mut lines) = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        (first, lines)
    })
    .await
    .unwrap();
    assert_eq!(ready, r#"{"ready":true}"#);
    let mut added = Vec::new();
    for (name, data, opts) in event_jobs() {
        added.push(queue.add(name, &data, opts).await.unwrap().id.to_string());
    }
    let worker = schema.worker("ev").await;
    let out = tokio::task::spawn_blocking(move || {
        let line = lines.next().and_then(Result::ok).unwrap_or_default();
        let status = child.wait().unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(status.success(), "node listen failed: {err}");
        line
    })
    .await
    .unwrap();
    worker.close().await;
    let out: Value = serde_json::from_str(&out).unwrap();
    let [ok, progress, fail] = [&added[0], &added[1], &added[2]];
    assert_eq!(
        out["events"],
        json!([
            {"event": "added", "args": {"name": "ok", "jobId": ok}},
            {"event": "added", "args": {"name": "progress", "jobId": progress}},
            {"event": "added", "args": {"name": "fail", "jobId": fail}},
            {"event": "active", "args": {"prev": "waiting", "jobId": ok}},
            {"event": "completed", "args": {"prev": "active", "jobId": ok, "returnvalue": {"double": 2}}},
            {"event": "active", "args": {"prev": "waiting", "jobId": progress}},
            {"event": "progress", "args": {"data": {"pct": 50}, "jobId": progress}},
            {"event": "completed", "args": {"prev": "active", "jobId": progress, "returnvalue": "done"}},
            {"event": "active", "args": {"prev": "waiting", "jobId": fail}},
            {"event": "failed", "args": {"prev": "active", "jobId": fail, "failedReason": "boom 2"}},
        ])
    );
}

// 5. Counts and getters -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_state_lists_and_jobs_read_alike() {
    let schema = Schema::new("counts");
    let queue = schema.queue("c").await;
    // Finished jobs, by a Rust worker: 2 completed, 1 failed.
    for (name, i) in [("ok", 1), ("ok", 2), ("fail", 3)] {
        queue
            .add(name, &json!({"i": i}), JobOptions::new())
            .await
            .unwrap();
    }
    let worker = schema.worker("c").await;
    eventually("three finished", WAIT, || settled(&queue, 3)).await;
    worker.close().await;
    // Then jobs in every other state, from both runtimes.
    let node_jobs = json!([
        {"name": "ok", "data": {"i": 10}},
        {"name": "ok", "data": {"i": 11}, "opts": {"delay": 3_600_000}},
        {"name": "ok", "data": {"i": 12}, "opts": {"priority": 3}},
        {"name": "ok", "data": {"i": 13}, "opts": {"priority": 1, "jobId": "n-13"}},
        {"name": "ok", "data": {"i": 14}, "opts": {"lifo": true}},
    ]);
    schema.node("c", &["add", &node_jobs.to_string()]).await;
    let rust_jobs = [
        (20, JobOptions::new()),
        (21, JobOptions::new().delay(Duration::from_secs(7200))),
        (22, JobOptions::new().priority(2).job_id("r-22")),
    ];
    for (i, opts) in rust_jobs {
        queue.add("ok", &json!({ "i": i }), opts).await.unwrap();
    }
    let flow = json!({"queueName": "c", "name": "parent", "data": {},
                      "children": [{"queueName": "c", "name": "ok", "data": {"i": 30}}]});
    schema.node("c", &["flow-add", &flow.to_string()]).await;
    FlowProducer::new(schema.backend("c").await)
        .add(
            FlowJob::new(q("c"), "parent", json!({})).child(FlowJob::new(
                q("c"),
                "ok",
                json!({"i": 31}),
            )),
        )
        .await
        .unwrap();

    // Both read the same counts, lists and jobs; then again once Rust paused the queue (its
    // waiting jobs still count as waiting, as on Redis: Node.js 6.7.6's `getJobCounts`).
    let waiting = agree(&schema, &queue, false).await;
    assert_eq!(waiting, 5);
    queue.pause().await.unwrap();
    assert_eq!(agree(&schema, &queue, true).await, 5);
}

/// Checks that Node's snapshot of queue `c` and Rust's readings agree (counts, `count`, counts
/// per priority, `isPaused`, each state's job list and every listed job); returns the number
/// of waiting jobs.
async fn agree(schema: &Schema, queue: &Queue<PostgresBackend>, paused: bool) -> u64 {
    let node = schema.node("c", &["snapshot"]).await;
    assert_eq!(node["paused"], paused);
    assert_eq!(queue.is_paused().await.unwrap(), paused);
    let count = queue.count().await.unwrap();
    assert_eq!(node["count"], count);
    let per_priority: serde_json::Map<String, Value> = queue
        .get_counts_per_priority(&[0, 1, 2, 3])
        .await
        .unwrap()
        .into_iter()
        .map(|(p, n)| (p.to_string(), json!(n)))
        .collect();
    assert_eq!(node["perPriority"], Value::Object(per_priority));
    assert_eq!(node["perPriority"], json!({"0": 5, "1": 1, "2": 1, "3": 1}));
    let types: Vec<JobType> = STATES.iter().map(|s| JobType::State(*s)).collect();
    let counts: BTreeMap<String, u64> = queue
        .get_job_counts(&types)
        .await
        .unwrap()
        .into_iter()
        .map(|(t, n)| (t.as_str().to_owned(), n))
        .collect();
    let waiting = 5;
    let expected: BTreeMap<String, u64> = [
        ("waiting", waiting),
        ("active", 0),
        ("delayed", 2),
        ("prioritized", 3),
        ("completed", 2),
        ("failed", 1),
        ("waiting-children", 2),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(counts, expected, "Rust's counts (paused: {paused})");
    assert_eq!(count, waiting + 2 + 3 + 2);
    let mut node_counts: BTreeMap<String, u64> =
        serde_json::from_value(node["counts"].clone()).unwrap();
    // Node's `paused` type no longer counts anything (its jobs are waiting).
    assert_eq!(node_counts.remove("paused"), Some(0), "Node's paused count");
    assert_eq!(node_counts, counts, "Node's counts (paused: {paused})");
    for state in STATES {
        let jobs = queue
            .get_jobs(&[JobType::State(state)], Range::ALL)
            .await
            .unwrap();
        let rust_ids: Vec<String> = jobs.iter().map(|j| j.id.to_string()).collect();
        assert_eq!(
            json!(rust_ids),
            node["ids"][state.as_str()],
            "getJobs({state}), paused: {paused}"
        );
        for job in &jobs {
            let id = job.id.as_str();
            assert_eq!(
                rust_view(queue, job).await,
                node["jobs"][id],
                "job {id} in {state}"
            );
        }
    }
    counts["waiting"]
}
