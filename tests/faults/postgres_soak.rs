//! R14 on PostgreSQL (docs/RELIABILITY.md): the chaos soak on a private cluster. Worker
//! processes (`bullmq-test-worker`) run on one queue while a producer keeps adding jobs and, at
//! random, a worker is killed (SIGKILL) and restarted, every client session is terminated with
//! `pg_terminate_backend`, or the server is crashed (`pg_ctl stop -m immediate`) and started
//! again.
//!
//! What is checked, once the faults stop and the last job is done:
//! - the table holds exactly the jobs whose add returned, each `completed` with a return value,
//!   none `waiting`, `active`, `delayed`, `prioritized` or `failed`, and no row half-moved;
//! - the event table has exactly one `completed` event per job, and no `failed` one;
//! - the worker processes together reported each job `completed` at most once (a finish that
//!   committed just before its worker was killed or its session cut is reported by nobody);
//! - a job ran again (a second `active` line) only within `RERUN_WINDOW` of a fault, and no
//!   more often than the jobs in flight at the faults explain (BullMQ's at-least-once: a
//!   killed attempt that never completed is taken again);
//! - every worker process still runs, and none reported a failed job.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bullmq::postgres::sqlx;
use bullmq::postgres::{PostgresBackend, SchemaName};
use bullmq::{BulkJob, JobOptions, Queue, QueueName};
use serde_json::json;

use crate::postgres::{admin, assert_invariants, backend, check_pool, states};
use crate::redis_worker::{WorkerProcess, test_worker};
use crate::support::pg_cluster::Cluster;
use crate::support::soak::{explained_reruns, next_random, soak_settings};
use crate::support::wait::eventually;

const WORKERS: usize = 3;
const CONCURRENCY: usize = 4;
const LOCK_MS: u64 = 2_000;
const STALLED_MS: u64 = 500;
/// A job stranded by a fault runs again once its lock has run out and two stalled checks have
/// passed, after a server restart of up to a few seconds, plus slack for a loaded machine.
const RERUN_WINDOW: Duration = Duration::from_secs(12);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    KillWorker,
    TerminateSessions,
    RestartServer,
}

/// A worker process on the cluster's queue (it migrates the schema, and waits for the server
/// when it starts during a restart).
fn spawn_worker(url: &str, schema: &SchemaName, queue: &QueueName, i: usize) -> WorkerProcess {
    let mut cmd = Command::new(test_worker());
    cmd.env("STORE", "postgres")
        .env("DATABASE_URL", url)
        .env("SCHEMA", schema.as_str())
        .env("QUEUE", queue.as_str())
        .env("NAME", format!("soak-{i}"))
        .env("CONCURRENCY", CONCURRENCY.to_string())
        .env("LOCK_MS", LOCK_MS.to_string())
        .env("STALLED_MS", STALLED_MS.to_string())
        // Stranded jobs are taken back, not failed, however often their worker dies.
        .env("MAX_STALLED", "1000")
        // Back soon after the server restarts.
        .env("RUN_RETRY_MS", "200")
        // Long enough that a killed worker or a cut session finds jobs in flight.
        .env("JOB_MS", "150")
        .stdout(Stdio::piped());
    WorkerProcess::spawn(cmd)
}

/// Adds batches of ten jobs with ids of their own until `stop`; a batch whose add failed (or
/// whose answer was lost) is sent again, which the custom ids make idempotent. Returns the ids
/// of every batch whose add returned.
async fn produce(queue: Queue<PostgresBackend>, stop: Arc<AtomicBool>) -> Vec<String> {
    let mut ids = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let batch: Vec<String> = (ids.len()..ids.len() + 10)
            .map(|n| format!("p{n}"))
            .collect();
        let jobs = || {
            batch
                .iter()
                .map(|id| BulkJob {
                    name: "soak".to_owned(),
                    data: json!({}),
                    opts: JobOptions::new().job_id(id.clone()),
                })
                .collect::<Vec<_>>()
        };
        while queue.add_bulk(jobs()).await.is_err() {
            // Retry interval while the server is down.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        ids.extend(batch);
        // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    ids
}

/// Terminates every client session but the caller's own; how many. 0 when the server is
/// still coming back from a restart (the fault then simply found no one).
async fn terminate_all(url: &str) -> i64 {
    let Ok(mut con) = admin(url).await else {
        return 0;
    };
    sqlx::query_scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
    )
    .fetch_one(&mut con)
    .await
    .unwrap_or(0)
}

/// Per job, how many `completed` (or `failed`) events the table holds.
async fn event_counts(pool: &sqlx::PgPool, queue: &str, event: &str) -> BTreeMap<String, i64> {
    sqlx::query_as::<_, (String, i64)>(
        "SELECT data->>'jobId', count(*) FROM event WHERE queue = $1 AND event = $2 GROUP BY 1",
    )
    .bind(queue)
    .bind(event)
    .fetch_all(pool)
    .await
    .unwrap()
    .into_iter()
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn r14_chaos_soak_on_postgres_every_job_completes_exactly_once() {
    let (soak, seed) = soak_settings(20);
    eprintln!("r14 postgres: seed {seed} (BULLMQ_SOAK_SEED), faults for {soak:?}");
    crate::postgres::watch_panics();
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let url = cluster.url();
    let schema = SchemaName::new("soak").unwrap();
    let name = QueueName::new("r14").unwrap();
    // The whole event table is checked at the end: a long run must not have it trimmed.
    let producer = Queue::try_new(name.clone(), backend(&url, &schema, &name).await)
        .expect("the backend is bound to this queue")
        .max_len_events(1_000_000);
    test_worker();
    let mut workers: Vec<WorkerProcess> = (0..WORKERS)
        .map(|i| spawn_worker(&url, &schema, &name, i))
        .collect();
    for w in &mut workers {
        w.expect_line("ready").await;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let producing = tokio::spawn(produce(producer, Arc::clone(&stop)));

    let mut rng = seed;
    let mut faults: Vec<(Instant, Fault)> = Vec::new();
    let mut retired = Vec::new();
    let mut terminated = 0;
    let started = Instant::now();
    while started.elapsed() < soak {
        // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
        tokio::time::sleep(Duration::from_millis(600 + next_random(&mut rng) % 800)).await;
        let fault = match next_random(&mut rng) % 3 {
            0 => Fault::KillWorker,
            1 => Fault::TerminateSessions,
            _ => Fault::RestartServer,
        };
        faults.push((Instant::now(), fault));
        match fault {
            Fault::KillWorker => {
                let i = usize::try_from(next_random(&mut rng) % 1024).unwrap() % WORKERS;
                workers[i].crash();
                let fresh = spawn_worker(&url, &schema, &name, i);
                retired.push(std::mem::replace(&mut workers[i], fresh));
            }
            Fault::TerminateSessions => terminated += terminate_all(&url).await,
            Fault::RestartServer => {
                let down = Duration::from_millis(next_random(&mut rng) % 1000);
                tokio::task::block_in_place(|| cluster.pg_ctl("stop"));
                // Fixed wait: how long the server stays down.
                tokio::time::sleep(down).await;
                tokio::task::block_in_place(|| cluster.pg_ctl("start"));
            }
        }
    }
    // Quiet: jobs keep coming for longer than a stranded job takes to run again.
    // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
    tokio::time::sleep(RERUN_WINDOW + Duration::from_secs(2)).await;
    stop.store(true, Ordering::SeqCst);
    let ids = producing.await.unwrap();
    let added: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(added.len(), ids.len());

    let pool = check_pool(&url, &schema).await;
    let queue = name.as_str();
    eventually(
        "every added job completed",
        Duration::from_secs(60),
        || async {
            states(&pool, queue)
                .await
                .get("completed")
                .copied()
                .unwrap_or(0)
                >= i64::try_from(ids.len()).unwrap()
        },
    )
    .await;

    // The table: exactly the jobs added, each completed with its value, nothing left behind.
    let rows: Vec<(String, String, bool)> = sqlx::query_as(
        "SELECT id, state::text, return_value IS NOT NULL FROM job WHERE queue = $1",
    )
    .bind(queue)
    .fetch_all(&pool)
    .await
    .unwrap();
    let stored: BTreeSet<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert_eq!(
        stored, added,
        "the jobs stored are the jobs whose add returned"
    );
    for (id, state, has_value) in &rows {
        assert_eq!(
            (state.as_str(), *has_value),
            ("completed", true),
            "job {id}"
        );
    }
    assert_invariants(&pool, queue).await;

    // The events: one `completed` a job, no `failed`.
    let completed = event_counts(&pool, queue, "completed").await;
    for id in &added {
        assert_eq!(
            completed.get(id).copied(),
            Some(1),
            "job {id}: completed events"
        );
    }
    assert_eq!(
        completed.len(),
        added.len(),
        "completed events of other ids"
    );
    assert!(event_counts(&pool, queue, "failed").await.is_empty());

    for w in &mut workers {
        assert!(w.child.try_wait().unwrap().is_none(), "a worker exited");
    }
    // What the processes reported: each run (`active`), each finish the store accepted.
    let mut runs: HashMap<String, Vec<Instant>> = HashMap::new();
    let mut reported: HashMap<String, usize> = HashMap::new();
    for w in workers.iter_mut().chain(&mut retired) {
        for (at, line) in w.drain_timed() {
            if let Some(id) = line.strip_prefix("active ") {
                runs.entry(id.to_owned()).or_default().push(at);
            } else if let Some(id) = line.strip_prefix("completed ") {
                *reported.entry(id.to_owned()).or_default() += 1;
            } else {
                assert!(
                    !line.starts_with("failed "),
                    "a worker failed a job: {line}"
                );
            }
        }
    }
    for (id, n) in &reported {
        assert_eq!(*n, 1, "job {id} reported completed {n} times");
    }
    let fault_times: Vec<Instant> = faults.iter().map(|f| f.0).collect();
    let reruns = explained_reruns(&mut runs, &fault_times, RERUN_WINDOW);
    let kinds = |k: Fault| faults.iter().filter(|f| f.1 == k).count();
    eprintln!(
        "r14 postgres: {} jobs, {} faults ({} worker kills, {} session terminations ending {terminated} sessions, {} server restarts), {reruns} re-runs, {} finishes reported by no worker",
        ids.len(),
        faults.len(),
        kinds(Fault::KillWorker),
        kinds(Fault::TerminateSessions),
        kinds(Fault::RestartServer),
        ids.len() - reported.len(),
    );
    // A fault strands at most the jobs in flight on every worker (a fetch-next included).
    assert!(
        reruns <= faults.len() * WORKERS * (CONCURRENCY + 1),
        "{reruns} re-runs for {} faults",
        faults.len()
    );
    assert!(ids.len() >= 100, "the producer kept adding ({})", ids.len());
    crate::postgres::assert_no_library_panic();
}
