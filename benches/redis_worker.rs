//! Worker throughput on Redis: how fast one worker empties a queue of pre-filled jobs.
//!
//! `benches/official/src/bin/worker.rs` (the official Rust port) and `benches/node/worker.mjs`
//! (Node.js BullMQ 6.7.6) run the same modes on the same jobs and print the same JSON lines;
//! `benches/compare-worker.sh` runs the three against one Redis and prints the comparison.
//!
//! Modes (`instant-c{1,10,100,500}-{keep,remove}`, `sleep10ms-c100`): jobs whose processor
//! returns at once, at concurrency 1, 10, 100 and 500, with `removeOnComplete` false (`keep`)
//! or true (`remove`, a job option); and jobs whose processor sleeps 10 ms, at concurrency 100
//! (kept). For each mode, on a fresh, unique key prefix (after an unmeasured warm-up on
//! another one):
//!
//! 1. the jobs are added with `add_bulk` in chunks of 1,000 (not timed);
//! 2. a worker is built with `autorun` off (its connection made, not timed);
//! 3. the clock starts and the worker runs; every 2 ms a separate connection asks for the
//!    lengths of the `wait` and `active` lists, and the clock stops when both are empty (every
//!    job finished: a job is in one of them from its add until its finishing move);
//! 4. the completed (and failed) counts are checked, the worker closed and the keys deleted.
//!
//! It prints one line per mode:
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"instant-c10-keep","jobs":20000,"concurrency":10,"secs":..,
//!  "jobs_per_sec":..,"client_cpu_us_per_job":..,"redis_cpu_us_per_job":..,"peak_rss_kb":..}
//! ```
//!
//! - client CPU: this process's CPU clock, `CLOCK_PROCESS_CPUTIME_ID`, over the timed part
//!   (the 2 ms polling included, the same in the three harnesses);
//! - Redis CPU: `used_cpu_sys + used_cpu_user` of `INFO cpu`, before and after. Redis is
//!   shared, so anything else it serves meanwhile counts too;
//! - peak RSS: `VmHWM` of `/proc/self/status` after the run, the high-water mark having been
//!   reset (`5` written to `/proc/self/clear_refs`) just before the clock started, so that
//!   the pre-filling does not count: the whole process's peak while its worker ran.
//!
//! Run with `cargo bench --bench redis_worker [-- --mode NAME[,NAME]]...`; `-- --test` (CI's
//! smoke run) processes 200 jobs per mode without warm-up. Env: `BENCH_JOBS` (20,000),
//! `BENCH_WARMUP` (2,000), `REDIS_URL` (`redis://127.0.0.1:6379`; `redis+cluster://…` with
//! `BENCH_ADMIN_URL`, see `support::measure::admin_url`), `BENCH_DIRECT_CONNECTIONS`
//! (the worker's `RedisOptions::direct_connections`; 0 sends every call through the
//! pipelined connection), `BENCH_WAIT_REPLICAS` (the worker's
//! `RedisOptions::wait_for_replicas`, 1 s timeout; unset: off).
//!
//! `-- --instructions` counts instead the client's instructions per processed job, ours and
//! the official port's side by side, under valgrind (see `support/instructions.rs`; run it
//! through `benches/compare-worker.sh --instructions`, which builds the official port).

#[path = "support/mod.rs"]
mod support;

#[path = "support/ours.rs"]
mod ours;

use bullmq::Prefix;
use bullmq::redis::{RedisBackend, RedisOptions};
use redis::aio::MultiplexedConnection;

use std::sync::Arc;

use ours::queue_name;
use support::cli::{Args, Settings, env_usize, runtime};
use support::instructions::{self, Finish, Step};
use support::measure::{
    Meter, admin, admin_url, delete_prefix, keyed_for, reset_peak_rss, unique_prefix,
};
use support::worker::{Mode, Run, check_finished, drain, line};

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-rs";
/// The first part of every key prefix.
const HARNESS: &str = "bench-worker-rs";

/// What to run, from the command line and the environment.
struct Config {
    run: Settings<Mode>,
    /// The worker's `RedisOptions::direct_connections`.
    direct_connections: usize,
}

impl Config {
    /// Reads the arguments (`--mode NAME[,NAME]`, `--test`; cargo's own `--bench` and anything
    /// else are ignored) and the environment.
    fn from_env() -> Self {
        Self {
            run: Settings::from_env(&Mode::ALL, Mode::parse),
            direct_connections: env_usize(
                "BENCH_DIRECT_CONNECTIONS",
                bullmq::redis::DEFAULT_DIRECT_CONNECTIONS,
            ),
        }
    }
}

async fn backend(config: &Config, prefix: &str) -> RedisBackend {
    let options = RedisOptions::new(config.run.url.as_str())
        .prefix(Prefix::new(prefix).expect("prefix"))
        .direct_connections(config.direct_connections);
    let options = ours::wait_for_replicas(options);
    RedisBackend::connect(&options, queue_name())
        .await
        .expect("connect")
}

/// Pre-fills `jobs` jobs under `prefix`, then times a worker processing them all.
async fn run(
    config: &Config,
    admin: &mut MultiplexedConnection,
    prefix: &str,
    mode: Mode,
    jobs: u64,
) -> Run {
    ours::fill(backend(config, prefix).await, mode, jobs).await;
    let worker = ours::worker(backend(config, prefix).await, mode, None).await;
    let rss_reset = reset_peak_rss();
    let meter = Meter::start(admin).await;
    worker.run().expect("run the worker");
    let measured = drain(admin, prefix, meter, rss_reset).await;
    worker.close().await;
    check_finished(admin, prefix, mode, jobs).await;
    measured
}

/// One measured mode: prints its JSON line.
async fn measure(config: &Config, admin: &mut MultiplexedConnection, mode: Mode) {
    if config.run.warmup > 0 {
        let prefix = keyed_for(&config.run.url, unique_prefix(HARNESS, "warmup"));
        run(config, admin, &prefix, mode, config.run.warmup).await;
        delete_prefix(admin, &prefix).await;
    }
    let prefix = keyed_for(&config.run.url, unique_prefix(HARNESS, &mode.name()));
    let r = run(config, admin, &prefix, mode, config.run.jobs).await;
    delete_prefix(admin, &prefix).await;
    println!("{}", line(IMPL, mode, config.run.jobs, &r));
}

/// A child of the instruction count (see `support::instructions`): fills the queue under
/// `prefix`, or works through it.
async fn counted_child(config: &Config, step: Step, prefix: &str) {
    let mode = config.run.modes[0];
    match step {
        Step::Fill => ours::fill(backend(config, prefix).await, mode, config.run.jobs).await,
        Step::Work => {
            let finish = Finish::new(config.run.jobs);
            let worker = ours::worker(
                backend(config, prefix).await,
                mode,
                Some(Arc::clone(&finish)),
            )
            .await;
            worker.run().expect("run the worker");
            finish.wait().await;
            worker.close().await;
        }
    }
}

fn main() {
    if std::env::args().any(|a| a == "--instructions") {
        let args = Args::parse();
        let modes: Vec<Mode> = if args.modes.is_empty() {
            Mode::ALL
                .into_iter()
                .filter(|m| m.counted_by_default())
                .collect()
        } else {
            args.modes.iter().map(|m| Mode::parse(m)).collect()
        };
        instructions::count_all(&modes);
        return;
    }
    let config = Config::from_env();
    if let Some((step, prefix)) = instructions::child() {
        runtime(false).block_on(counted_child(&config, step, &prefix));
        return;
    }
    runtime(false).block_on(async {
        let mut admin = admin(&admin_url(&config.run.url)).await;
        for &mode in &config.run.modes {
            measure(&config, &mut admin, mode).await;
        }
    });
}
