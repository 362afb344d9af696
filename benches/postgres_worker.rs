//! Worker throughput on PostgreSQL: how fast one worker empties a queue of pre-filled jobs.
//!
//! `benches/node/pg-worker.mjs` (Node.js BullMQ 6.7.0 on its own PostgreSQL backend) runs the
//! same modes on the same jobs and prints the same JSON lines; `benches/compare-postgres.sh`
//! runs both against one server and prints the comparison.
//!
//! Modes: `instant-c1-keep`, `instant-c10-keep` and `instant-c100-keep` by default (a
//! processor that returns at once, at concurrency 1, 10 and 100, completed jobs kept); any
//! mode of `redis_worker` may be named (`instant-c100-remove`, `sleep10ms-c100`, …). For each
//! mode, in a fresh, unique schema (after an unmeasured warm-up in another one):
//!
//! 1. the schema is migrated and the jobs added with `add_bulk` in chunks of 1,000 (not timed);
//! 2. a worker is built with `autorun` off (not timed);
//! 3. the clock starts and the worker runs; every 2 ms a separate connection asks whether a
//!    job is still `waiting` or `active`, and the clock stops when none is;
//! 4. the completed (and failed) counts are checked, the worker closed and the schema dropped.
//!
//! It prints one line per mode:
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"instant-c10-keep","jobs":5000,"concurrency":10,"secs":..,
//!  "jobs_per_sec":..,"client_cpu_us_per_job":..,"pg_cpu_us_per_job":..,"pg_processes":..,
//!  "peak_rss_kb":..}
//! ```
//!
//! Client CPU, PostgreSQL CPU and peak RSS are measured as in `postgres_add` and
//! `redis_worker` (the polling connection's own backend is not counted).
//!
//! Run with `cargo bench --bench postgres_worker --features postgres [-- --mode NAME]...`;
//! `-- --test` (CI's smoke run) processes 200 jobs per mode without warm-up. Env:
//! `BENCH_JOBS` (20,000), `BENCH_WARMUP` (2,000), `DATABASE_URL`
//! (`postgres://postgres@127.0.0.1:5432/test`, a local server over TCP).

#[path = "support/mod.rs"]
mod support;

#[path = "support/postgres.rs"]
mod pg;

use std::time::Duration;

use bullmq::core::backend::Lifecycle;
use bullmq::postgres::{PostgresBackend, SchemaName};
use bullmq::{ActiveJob, BulkJob, JobOptions, KeepJobs, Queue, QueueName, Worker};
use bullmq::{CancellationToken, ProcessResult, WorkerOptions};

use pg::{Admin, Meter, Usage, options, unique_schema};
use support::cli::{Settings, runtime};
use support::jobs::{CHUNK, Data, JOB_NAME, QUEUE};
use support::measure::{reset_peak_rss, status_kb};
use support::worker::{Mode, POLL};

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-rs";
/// The first part of every schema's name.
const HARNESS: &str = "bpg_wrk_rs";
/// The modes run when none is named.
const DEFAULT_MODES: [&str; 3] = ["instant-c1-keep", "instant-c10-keep", "instant-c100-keep"];

async fn backend(schema: &SchemaName) -> PostgresBackend {
    PostgresBackend::connect(&options(schema), QueueName::new(QUEUE).expect("queue name"))
        .await
        .expect("connect")
}

/// Adds `jobs` jobs in `schema`, `add_bulk` in chunks.
async fn fill(schema: &SchemaName, mode: Mode, jobs: u64) {
    let queue = Queue::new(
        QueueName::new(QUEUE).expect("queue name"),
        backend(schema).await,
    );
    let opts = if mode.remove {
        JobOptions::default().remove_on_complete(KeepJobs::RemoveAll)
    } else {
        JobOptions::default()
    };
    let mut start = 0;
    while start < jobs {
        let end = (start + CHUNK).min(jobs);
        let chunk = (start..end)
            .map(|i| BulkJob {
                name: JOB_NAME.to_owned(),
                data: Data::new(i),
                opts: opts.clone(),
            })
            .collect();
        queue.add_bulk(chunk).await.expect("add_bulk");
        start = end;
    }
    queue
        .backend()
        .close(false)
        .await
        .expect("close the filling queue");
}

/// What one run measured.
struct Run {
    usage: Usage,
    peak_rss_kb: u64,
}

/// Pre-fills `jobs` jobs in a fresh schema, times a worker processing them all, checks the
/// outcome and drops the schema.
async fn run(admin: &mut Admin, mode: Mode, jobs: u64, tag: &str) -> Run {
    let schema = unique_schema(HARNESS, tag);
    fill(&schema, mode, jobs).await;
    let work = Duration::from_millis(mode.work_ms);
    let options = WorkerOptions::new()
        .concurrency(mode.concurrency)
        .autorun(false);
    let worker = Worker::new(
        QueueName::new(QUEUE).expect("queue name"),
        backend(&schema).await,
        options,
        move |_job: ActiveJob<PostgresBackend>, _cancel: CancellationToken| async move {
            if !work.is_zero() {
                tokio::time::sleep(work).await;
            }
            ProcessResult::Ok(serde_json::Value::Null)
        },
    )
    .await
    .expect("the worker");
    let rss_reset = reset_peak_rss();
    let meter = Meter::start();
    worker.run().expect("run the worker");
    let mut rss_max = 0;
    while admin.unfinished(&schema).await {
        if !rss_reset {
            rss_max = rss_max.max(status_kb("VmRSS"));
        }
        tokio::time::sleep(POLL).await;
    }
    let usage = meter.stop(admin).await;
    let peak_rss_kb = if rss_reset {
        status_kb("VmHWM")
    } else {
        rss_max
    };
    worker.close().await;
    let completed = admin.count(&schema, "completed").await;
    let failed = admin.count(&schema, "failed").await;
    admin.drop_schema(&schema).await;
    assert_eq!(failed, 0, "no job failed");
    let expected = if mode.remove { 0 } else { jobs };
    assert_eq!(
        u64::try_from(completed).ok(),
        Some(expected),
        "completed jobs kept"
    );
    Run { usage, peak_rss_kb }
}

/// One measured mode: prints its JSON line.
async fn measure(settings: &Settings<Mode>, admin: &mut Admin, mode: Mode) {
    if settings.warmup > 0 {
        run(admin, mode, settings.warmup, "warmup").await;
    }
    let name = mode.name();
    let r = run(admin, mode, settings.jobs, &name).await;
    println!(
        r#"{{"impl":"{IMPL}","mode":"{name}","jobs":{},"concurrency":{},{},"peak_rss_kb":{}}}"#,
        settings.jobs,
        mode.concurrency,
        r.usage.per_job_fields(settings.jobs),
        r.peak_rss_kb,
    );
}

fn main() {
    let mut settings = Settings::from_env(&Mode::ALL, Mode::parse);
    if support::cli::Args::parse().modes.is_empty() {
        settings.modes = DEFAULT_MODES.iter().map(|m| Mode::parse(m)).collect();
    }
    runtime(false).block_on(async {
        let mut admin = Admin::connect().await;
        for &mode in &settings.modes {
            measure(&settings, &mut admin, mode).await;
        }
        admin.close().await;
    });
}
