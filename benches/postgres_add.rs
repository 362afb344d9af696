//! Add throughput on PostgreSQL: sequential `add` (one awaited call at a time), `add` from 8
//! concurrent tasks sharing one queue and its pool, and `add_bulk` in chunks of 1,000; the
//! same modes and jobs as `redis_add`.
//!
//! `benches/node/pg-add.mjs` (Node.js BullMQ 6.7.6 on its own PostgreSQL backend) runs the
//! same modes on the same jobs and prints the same JSON lines; `benches/compare-postgres.sh`
//! runs both against one server and prints the comparison.
//!
//! Each mode runs in a fresh, unique schema (migrated as the queue connects, not timed), after
//! an unmeasured warm-up in another one, and prints one line:
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"sequential","jobs":5000,"secs":..,"jobs_per_sec":..,
//!  "client_cpu_us_per_job":..,"pg_cpu_us_per_job":..,"pg_processes":..}
//! ```
//!
//! - `secs`: wall time of the adds alone;
//! - client CPU: this process's CPU clock, `CLOCK_PROCESS_CPUTIME_ID` (every thread);
//! - PostgreSQL CPU: `utime + stime` of the server processes serving this one, read from
//!   `/proc` before and after (`pg_processes` of them; see `support/postgres.rs`).
//!
//! The job count is checked (`waiting` rows) and the schema dropped afterwards.
//!
//! Run with `cargo bench --bench postgres_add --features postgres [-- --mode NAME]...`;
//! `-- --test` (CI's smoke run) adds 200 jobs per mode without warm-up. Env: `BENCH_JOBS`
//! (20,000), `BENCH_WARMUP` (2,000), `DATABASE_URL`
//! (`postgres://postgres@127.0.0.1:5432/test`, a local server over TCP).

#[path = "support/mod.rs"]
mod support;

#[path = "support/postgres.rs"]
mod pg;

#[path = "support/ours.rs"]
mod ours;

use bullmq::Queue;
use bullmq::backend::Lifecycle;

use ours::queue_name;
use pg::{Admin, Meter, Usage, unique_schema};
use support::add::{Mode, line};
use support::cli::{Settings, runtime};

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-rs";
/// The first part of every schema's name.
const HARNESS: &str = "bpg_add_rs";

/// Runs `mode` for `jobs` jobs in a fresh schema, dropped afterwards: what it took, and how
/// many jobs were then waiting.
async fn in_schema(admin: &mut Admin, mode: Mode, jobs: u64, tag: &str) -> (Usage, i64) {
    let schema = unique_schema(HARNESS, tag);
    let backend = pg::backend(&schema).await;
    let q =
        Queue::try_new(queue_name(), backend.clone()).expect("the backend is bound to this queue");
    let meter = Meter::start();
    ours::add(q, mode, jobs).await;
    let usage = meter.stop(admin).await;
    let waiting = admin.count(&schema, "waiting").await;
    backend.close(false).await.expect("close the queue");
    admin.drop_schema(&schema).await;
    (usage, waiting)
}

/// One measured mode: prints its JSON line.
async fn measure(settings: &Settings<Mode>, admin: &mut Admin, mode: Mode) {
    if settings.warmup > 0 {
        in_schema(admin, mode, settings.warmup, "warmup").await;
    }
    let (usage, waiting) = in_schema(admin, mode, settings.jobs, mode.name()).await;
    assert_eq!(
        u64::try_from(waiting).ok(),
        Some(settings.jobs),
        "every job is waiting"
    );
    println!("{}", line(IMPL, mode, settings.jobs, &usage));
}

fn main() {
    let settings = Settings::from_env(&Mode::ALL, Mode::parse);
    runtime(false).block_on(async {
        let mut admin = Admin::connect().await;
        for &mode in &settings.modes {
            measure(&settings, &mut admin, mode).await;
        }
        admin.close().await;
    });
}
