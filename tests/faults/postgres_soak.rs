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

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bullmq::postgres::SchemaName;
use bullmq::postgres::sqlx;
use bullmq::{Queue, QueueName};
use serde_json::json;

use crate::postgres::{admin, assert_invariants, backend, check_pool, states};
use crate::redis_worker::{FAULTS, Fault, WorkerProcess, kill_one, reports, test_worker};
use crate::support::chaos::{self, ChaosPlan, Producer};
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
    let queue = Queue::try_new(name.clone(), backend(&url, &schema, &name).await)
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
    let producer = Producer {
        ids: "p",
        data: json!({}),
        pace: Duration::from_millis(200),
        retry: Duration::from_millis(100),
    };
    let producing = tokio::spawn(producer.run_one(queue, Arc::clone(&stop)));

    let mut retired = Vec::new();
    let mut terminated = 0;
    let respawn = |i| spawn_worker(&url, &schema, &name, i);
    let faults = ChaosPlan::new(soak, seed, RERUN_WINDOW)
        .run(&FAULTS, async |fault, rng| match fault {
            Fault::KillWorker => kill_one(&mut workers, &mut retired, rng, respawn),
            Fault::KillConnections => terminated += terminate_all(&url).await,
            Fault::RestartServer => {
                let down = Duration::from_millis(next_random(rng) % 1000);
                tokio::task::block_in_place(|| cluster.pg_ctl("stop"));
                // Fixed wait: how long the server stays down.
                tokio::time::sleep(down).await;
                tokio::task::block_in_place(|| cluster.pg_ctl("start"));
            }
        })
        .await;
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

    // What the processes reported: each run (`active`), each finish the store accepted.
    let mut reports = reports(&mut workers, &mut retired);
    assert!(
        reports.failed.is_empty(),
        "a worker failed a job: {:?}",
        reports.failed
    );
    for (id, n) in &reports.completed {
        assert_eq!(*n, 1, "job {id} reported completed {n} times");
    }
    let reruns = explained_reruns(&mut reports.runs, &chaos::started(&faults), RERUN_WINDOW);
    let tally = chaos::tally(&faults, &FAULTS);
    eprintln!(
        "r14 postgres: {} jobs, {tally} ending {terminated} sessions, {reruns} re-runs, {} finishes reported by no worker",
        ids.len(),
        ids.len() - reports.completed.len(),
    );
    chaos::assert_bounds(reruns, faults.len(), WORKERS, CONCURRENCY, ids.len(), 100);
    crate::postgres::assert_no_library_panic();
}
