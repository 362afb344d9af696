//! A live `QueueEvents` on PostgreSQL under load sees every committed event once, in id order.
//!
//! Event ids are taken from a sequence before their transactions commit, so under concurrent
//! workers events commit out of id order. Upstream's reader (`id > cursor`) skips the ones that
//! commit after a later id it has already read: with Node.js BullMQ 6.7.6's own `QueueEvents`,
//! `benches/node/pg-events-loss.mjs` counts what it misses under this same load. Ours holds
//! back the events behind transactions still writing to the `event` table, so here, with 3,000
//! jobs added while 4 workers at concurrency 16 (each worker its own pool) process them, the
//! reader, started before the jobs, must deliver:
//!
//! - exactly the `completed` rows of the `event` table (read with sqlx after the run), in the
//!   same order: 3,000, each job once;
//! - every event of the queue in the table (`added`, `waiting`, `active`, `drained`, …), each
//!   once, ids strictly increasing.
//!
//! Once with Rust workers, once with Node.js workers (`tests/node/pg-load-workers.mjs`, bullmq
//! 6.7.6 on its own backend) writing the events while our reader reads them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bullmq::job::JobType;
use bullmq::postgres::PostgresBackend;
use bullmq::postgres::sqlx::{self, Connection as _, Row as _};
use bullmq::{
    ActiveJob, BulkJob, CancellationToken, EventItem, JobOptions, JobState, ProcessResult, Queue,
    QueueEvents, QueueEventsOptions, QueueName, Worker, WorkerOptions,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::support::postgres::{SchemaGuard, admin, database_url};

/// Jobs per run.
const JOBS: usize = 3_000;
/// Workers, each with a backend (pool) of its own.
const WORKERS: usize = 4;
/// Jobs each worker runs at once.
const CONCURRENCY: usize = 16;
/// Jobs per `add_bulk` call: the jobs are added while the workers already run, so adds and
/// completions write events at the same time.
const CHUNK: usize = 250;
/// One run at a time: each opens some 50 connections and keeps both cores busy.
static ONE_RUN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
/// How long the whole run may take before the test fails.
const WAIT: Duration = Duration::from_secs(45);
/// How long the reader has to catch up with the table once every job is done: past its
/// `blocking_timeout` (10 s), since a skipped NOTIFY (upstream notifies once per queue at a
/// time) defers a wake-up until then.
const CATCH_UP: Duration = Duration::from_secs(15);
const QUEUE: &str = "load";

/// A schema no other test uses, dropped when the test ends (even when it fails).
struct Schema(SchemaGuard);

impl Schema {
    fn new(tag: &str) -> Self {
        Self(SchemaGuard::new(&format!("pgload_{tag}")))
    }

    /// A new, migrated backend for the queue (its own pool).
    async fn backend(&self) -> PostgresBackend {
        self.0.backend(QUEUE).await
    }

    /// Every event of the queue in the table, by id: `(id, name, jobId)`.
    async fn table_events(&self) -> Vec<(i64, String, Option<String>)> {
        let mut conn = admin().await;
        let sql = format!(
            "SELECT id, event, data->>'jobId' AS job_id FROM {}.event WHERE queue = $1 ORDER BY id",
            self.0.name().quoted()
        );
        let rows = sqlx::query(&sql)
            .bind(QUEUE)
            .fetch_all(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        rows.iter()
            .map(|r| (r.get("id"), r.get("event"), r.get("job_id")))
            .collect()
    }
}

/// One event as the reader delivered it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    id: i64,
    name: String,
    job_id: Option<String>,
}

/// The live reader: a `QueueEvents` with Node's defaults (from `$`, 10 s blocking reads) on
/// a backend of its own, and a task that forwards every event it delivers.
struct Reader {
    events: QueueEvents<PostgresBackend>,
    rx: mpsc::UnboundedReceiver<Seen>,
    seen: Vec<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Reader {
    async fn start(schema: &Schema) -> Self {
        Self::start_on(schema.backend().await).await
    }

    async fn start_on(backend: PostgresBackend) -> Self {
        // Room for every event of the run, so the forwarding task never lags.
        let options = QueueEventsOptions::new().capacity(1 << 16);
        let events = QueueEvents::new(backend, options).unwrap();
        let mut sub = events.subscribe();
        tokio::time::timeout(Duration::from_secs(10), events.wait_until_ready())
            .await
            .expect("the reader ready in time")
            .unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            while let Some(item) = sub.recv().await {
                match item {
                    EventItem::Event(event) => {
                        let seen = Seen {
                            id: event.id.as_str().parse().expect("a PostgreSQL event id"),
                            name: event.event.name().to_owned(),
                            job_id: event.event.job_id().map(str::to_owned),
                        };
                        if tx.send(seen).is_err() {
                            return;
                        }
                    }
                    EventItem::Lagged(n) => panic!("the test's subscriber lagged by {n}"),
                    // Reported and retried from the last event by the reader: not a loss.
                    EventItem::Error(e) => eprintln!("reader error (retried): {e}"),
                    _ => {}
                }
            }
        });
        Self {
            events,
            rx,
            seen: Vec::new(),
            task,
        }
    }

    /// Receives until `done` holds for what was delivered, or `deadline`.
    async fn until(&mut self, deadline: Instant, done: impl Fn(&[Seen]) -> bool) -> bool {
        while !done(&self.seen) {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(event)) => self.seen.push(event),
                Ok(None) => panic!("the reader stopped"),
                Err(_) => return false,
            }
        }
        true
    }

    /// Stops the reader; every event it delivered.
    async fn close(mut self) -> Vec<Seen> {
        self.events.close().await;
        self.task.await.unwrap();
        while let Some(event) = self.rx.recv().await {
            self.seen.push(event);
        }
        self.seen
    }
}

/// The producer. The `event` table keeps every event of the run (upstream trims it to
/// `opts.maxLenEvents`, 10,000 by default; a run writes about 12,000), so it can be compared
/// with what the reader delivered.
async fn queue(schema: &Schema) -> Queue<PostgresBackend> {
    Queue::try_new(QueueName::new(QUEUE).unwrap(), schema.backend().await)
        .expect("the backend is bound to this queue")
        .max_len_events(100_000)
}

/// Adds the run's jobs in chunks, `{i}` as data.
async fn add_jobs(queue: &Queue<PostgresBackend>) {
    for start in (0..JOBS).step_by(CHUNK) {
        let chunk = (start..(start + CHUNK).min(JOBS))
            .map(|i| BulkJob {
                name: "load".to_owned(),
                data: json!({ "i": i }),
                opts: JobOptions::new(),
            })
            .collect();
        queue.add_bulk(chunk).await.unwrap();
    }
}

/// The run's checks, once every job is done: the reader catches up with the table, then its
/// events are compared with the table's.
async fn check(schema: &Schema, mut reader: Reader, runtime: &str) {
    let table = schema.table_events().await;
    let newest = table.last().map_or(0, |e| e.0);
    let catching_up = Instant::now();
    let caught_up = reader
        .until(catching_up + CATCH_UP, |seen| {
            seen.last().is_some_and(|e| e.id >= newest)
        })
        .await;
    let behind = catching_up.elapsed();
    let seen = reader.close().await;
    // No writer is left: the table is final.
    let table = schema.table_events().await;
    let in_table: Vec<Seen> = table
        .into_iter()
        .map(|(id, name, job_id)| Seen { id, name, job_id })
        .collect();
    let completed = seen.iter().filter(|e| e.name == "completed").count();
    eprintln!(
        "{runtime} workers: our reader saw {completed} of {} completed events \
         ({} events of {} in the table; the last one delivered {behind:.1?} after the jobs \
         were done)",
        in_table.iter().filter(|e| e.name == "completed").count(),
        seen.len(),
        in_table.len()
    );
    assert!(caught_up, "the reader did not reach event {newest} in time");

    // Strictly increasing ids: nothing delivered twice or out of order.
    for pair in seen.windows(2) {
        assert!(
            pair[0].id < pair[1].id,
            "event {} delivered after {}",
            pair[1].id,
            pair[0].id
        );
    }

    // The `completed` events: exactly the table's, each job once.
    let ours: Vec<&Seen> = seen.iter().filter(|e| e.name == "completed").collect();
    let theirs: Vec<&Seen> = in_table.iter().filter(|e| e.name == "completed").collect();
    let jobs: HashSet<&str> = ours.iter().filter_map(|e| e.job_id.as_deref()).collect();
    assert_eq!(theirs.len(), JOBS, "completed rows in the table");
    assert_eq!(jobs.len(), JOBS, "distinct jobs among the completed events");
    if ours != theirs {
        let ours_ids: HashSet<i64> = ours.iter().map(|e| e.id).collect();
        let missed: Vec<i64> = theirs
            .iter()
            .map(|e| e.id)
            .filter(|id| !ours_ids.contains(id))
            .take(20)
            .collect();
        panic!(
            "the reader's {} completed events differ from the table's {}; missed e.g. {missed:?}",
            ours.len(),
            theirs.len()
        );
    }

    // And every other event of the queue: the reader started before the first one.
    if seen != in_table {
        let ours_ids: HashSet<i64> = seen.iter().map(|e| e.id).collect();
        let missed: Vec<&Seen> = in_table
            .iter()
            .filter(|e| !ours_ids.contains(&e.id))
            .take(10)
            .collect();
        panic!(
            "the reader delivered {} events, the table has {}; missed e.g. {missed:?}",
            seen.len(),
            in_table.len()
        );
    }
}

/// What each load test starts with: the server to itself, a schema (named after `tag`) and its
/// queue, when it started, and the events reader started with it.
struct LoadRun {
    _one: tokio::sync::MutexGuard<'static, ()>,
    schema: Schema,
    queue: Queue<PostgresBackend>,
    started: Instant,
    reader: Reader,
}

impl LoadRun {
    async fn start(tag: &str) -> Self {
        let _one = ONE_RUN.lock().await;
        let schema = Schema::new(tag);
        let queue = queue(&schema).await;
        let started = Instant::now();
        let reader = Reader::start(&schema).await;
        Self {
            _one,
            schema,
            queue,
            started,
            reader,
        }
    }
}

async fn work(job: ActiveJob<PostgresBackend>, _cancel: CancellationToken) -> ProcessResult {
    let data: Value = job.data_as()?;
    Ok(json!({ "i": data["i"] }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reader_sees_every_event_of_rust_workers_under_load() {
    let run = LoadRun::start("rs").await;
    let mut workers = Vec::new();
    for n in 0..WORKERS {
        let options = WorkerOptions::new()
            .name(format!("load-w{n}"))
            .concurrency(CONCURRENCY)
            .drain_delay(Duration::from_millis(500));
        workers.push(
            Worker::new(
                QueueName::new(QUEUE).unwrap(),
                run.schema.backend().await,
                options,
                work,
            )
            .await
            .unwrap(),
        );
    }
    add_jobs(&run.queue).await;
    let completed = JobType::State(JobState::Completed);
    loop {
        let done = run
            .queue
            .get_job_count_by_types(&[completed])
            .await
            .unwrap();
        if done >= JOBS as u64 {
            break;
        }
        assert!(
            Instant::now() < run.started + WAIT,
            "only {done} of {JOBS} jobs completed after {WAIT:?}"
        );
        // Poll interval of a loop that names, when it gives up, what is still pending.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for worker in &workers {
        worker.close().await;
    }
    check(&run.schema, run.reader, "Rust").await;
    eprintln!("Rust workers: {:?}", run.started.elapsed());
}

/// Node's workers, as a child process killed if the test ends first.
struct NodeWorkers(Child);

impl Drop for NodeWorkers {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reader_sees_every_event_of_node_workers_under_load() {
    let run = LoadRun::start("js").await;
    let dir = support::node_dir();
    assert!(
        dir.join("node_modules").join("bullmq").exists(),
        "the pinned Node.js packages are not installed: run `npm ci --prefix {}`",
        dir.display()
    );
    let mut child = Command::new("node")
        .arg("pg-load-workers.mjs")
        .arg(JOBS.to_string())
        .current_dir(&dir)
        .env("DATABASE_URL", database_url())
        .env("SCHEMA", run.schema.0.as_str())
        .env("QUEUE", QUEUE)
        .env("WORKERS", WORKERS.to_string())
        .env("CONCURRENCY", CONCURRENCY.to_string())
        .env("TIMEOUT", WAIT.as_millis().to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run `node` (Node.js 20 is needed for the interop tests)");
    let stdout = child.stdout.take().unwrap();
    let mut node = NodeWorkers(child);
    // Its lines, read off the async threads: `{"ready":true}`, then the final counts.
    let (lines_tx, mut lines) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    let ready = tokio::time::timeout(Duration::from_secs(20), lines.recv())
        .await
        .expect("Node's workers ready in time")
        .expect("Node's workers started (see its stderr)");
    assert_eq!(ready, r#"{"ready":true}"#);

    add_jobs(&run.queue).await;
    let summary = tokio::time::timeout_at(run.started + WAIT, lines.recv())
        .await
        .expect("Node's workers end in time")
        .expect("Node's workers print their counts (see its stderr)");
    let summary: Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(summary, json!({"completed": JOBS, "failed": 0}));
    let status = tokio::task::spawn_blocking(move || node.0.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "Node's workers exited with {status}");
    check(&run.schema, run.reader, "Node.js").await;
    eprintln!("Node.js workers: {:?}", run.started.elapsed());
}
