//! Worker throughput on PostgreSQL: how fast one worker empties a queue of pre-filled jobs.
//!
//! `benches/node/pg-worker.mjs` (Node.js BullMQ 6.7.6 on its own PostgreSQL backend) runs the
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
//!
//! `benches/postgres-statements.sh` runs it in two steps (fill, then work, see
//! `support/instructions.rs`) to read the server's statistics per processed job.

#[path = "support/mod.rs"]
mod support;

#[path = "support/postgres.rs"]
mod pg;

#[path = "support/ours.rs"]
mod ours;

use std::sync::Arc;

use bullmq_postgres::SchemaName;
use pg::{Admin, Meter, Usage, unique_schema};
use support::cli::{Settings, runtime};
use support::instructions::{self, Finish, Step};
use support::measure::PeakRss;
use support::worker::{Mode, POLL, Run, assert_finished, line};

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-rs";
/// The first part of every schema's name.
const HARNESS: &str = "bpg_wrk_rs";
/// The modes run when none is named.
const DEFAULT_MODES: [&str; 3] = ["instant-c1-keep", "instant-c10-keep", "instant-c100-keep"];

/// Pre-fills `jobs` jobs in a fresh schema, times a worker processing them all, checks the
/// outcome and drops the schema.
async fn run(admin: &mut Admin, mode: Mode, jobs: u64, tag: &str) -> Run<Usage> {
    let schema = unique_schema(HARNESS, tag);
    ours::fill(pg::backend(&schema).await, mode, jobs).await;
    let worker = ours::worker(pg::backend(&schema).await, mode, None).await;
    let mut rss = PeakRss::start();
    let meter = Meter::start();
    worker.run().expect("run the worker");
    while admin.unfinished(&schema).await {
        rss.sample();
        tokio::time::sleep(POLL).await;
    }
    let usage = meter.stop(admin).await;
    let peak_rss_kb = rss.kb();
    worker.close().await;
    let completed = admin.count(&schema, "completed").await;
    let failed = admin.count(&schema, "failed").await;
    admin.drop_schema(&schema).await;
    let count = |n: i64| u64::try_from(n).expect("a count");
    assert_finished(mode, jobs, count(completed), count(failed));
    Run { usage, peak_rss_kb }
}

/// One measured mode: prints its JSON line.
async fn measure(settings: &Settings<Mode>, admin: &mut Admin, mode: Mode) {
    if settings.warmup > 0 {
        run(admin, mode, settings.warmup, "warmup").await;
    }
    let r = run(admin, mode, settings.jobs, &mode.name()).await;
    println!("{}", line(IMPL, mode, settings.jobs, &r));
}

/// A child of `benches/postgres-statements.sh` (the steps of `support/instructions.rs`):
/// fills the queue in `schema`, or works through it, so that the server's statistics can be
/// reset between the two.
async fn counted_child(settings: &Settings<Mode>, step: Step, schema: &str) {
    let schema = SchemaName::new(schema).expect("a schema name");
    let mode = settings.modes[0];
    match step {
        Step::Fill => ours::fill(pg::backend(&schema).await, mode, settings.jobs).await,
        Step::Work => {
            let finish = Finish::new(settings.jobs);
            let backend = pg::backend(&schema).await;
            let worker = ours::worker(backend, mode, Some(Arc::clone(&finish))).await;
            worker.run().expect("run the worker");
            finish.wait().await;
            worker.close().await;
        }
    }
}

fn main() {
    if let Some((step, schema)) = instructions::child() {
        let settings = Settings::from_env(&Mode::ALL, Mode::parse);
        runtime(false).block_on(counted_child(&settings, step, &schema));
        return;
    }
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
