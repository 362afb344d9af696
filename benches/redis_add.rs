//! Add throughput on Redis: sequential `add` (one awaited call at a time), `add` from 8
//! concurrent tasks sharing one queue and its connection, and `add_bulk` in chunks of 1,000.
//!
//! `benches/official/` (the official Rust port) and `benches/node/add.mjs` (Node.js BullMQ
//! 6.7.6) run the same modes on the same jobs and print the same JSON lines;
//! `benches/compare-add.sh` runs the three against one Redis and prints the comparison.
//!
//! Each mode runs on a fresh, unique key prefix, after an unmeasured warm-up on another one,
//! and prints one line:
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"sequential","jobs":20000,"secs":..,"jobs_per_sec":..,
//!  "client_cpu_us_per_job":..,"redis_cpu_us_per_job":..}
//! ```
//!
//! - `secs`: wall time of the adds alone (connecting and the warm-up are outside it);
//! - client CPU: this process's CPU clock, `CLOCK_PROCESS_CPUTIME_ID` (every thread, the
//!   runtime's workers included, with nanosecond resolution; `/proc/self/stat` only counts
//!   10 ms ticks, and `/proc/self/schedstat` counts the main thread alone);
//! - Redis CPU: `used_cpu_sys + used_cpu_user` of `INFO cpu`, read before and after on a
//!   separate connection. Redis is shared, so anything else it serves meanwhile counts too.
//!
//! The job count is checked (`LLEN` of the wait list) and the keys are deleted afterwards.
//!
//! Run with `cargo bench --bench redis_add [-- --mode NAME]...`; `-- --test` (CI's smoke run)
//! adds 200 jobs per mode without warm-up. Env: `BENCH_JOBS` (20,000), `BENCH_WARMUP`
//! (2,000), `REDIS_URL` (`redis://127.0.0.1:6379`; `redis+cluster://…` with `BENCH_ADMIN_URL`,
//! see `support::measure::admin_url`), `BENCH_RUNTIME` (`multi_thread`, the
//! default, or `current_thread`), `BENCH_TASK` (`spawn`: run each mode in a spawned task, on a
//! runtime worker, instead of in `block_on` on the main thread as `#[tokio::main]` does),
//! `BENCH_DIRECT_CONNECTIONS` (`RedisOptions::direct_connections`; 0 sends every call through
//! the pipelined connection), `BENCH_WAIT_REPLICAS` (`RedisOptions::wait_for_replicas`, 1 s
//! timeout; unset: off).

#[path = "support/mod.rs"]
mod support;

#[path = "support/ours.rs"]
mod ours;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{Prefix, Queue};
use redis::aio::MultiplexedConnection;

use ours::queue_name;
use support::add::{Mode, finish};
use support::cli::{env_usize, runtime};
use support::measure::{Meter, admin, admin_url, delete_prefix, keyed_for, unique_prefix};

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-rs";
/// The first part of every key prefix.
const HARNESS: &str = "bench-add-rs";

/// What to run, from the command line and the environment.
struct Config {
    add: support::add::Config,
    /// `RedisOptions::direct_connections`.
    direct_connections: usize,
}

impl Config {
    fn from_env() -> Self {
        Self {
            add: support::add::Config::from_env(),
            direct_connections: env_usize(
                "BENCH_DIRECT_CONNECTIONS",
                bullmq::redis::DEFAULT_DIRECT_CONNECTIONS,
            ),
        }
    }
}

async fn queue(config: &Config, prefix: &str) -> Queue<RedisBackend> {
    let options = RedisOptions::new(config.add.run.url.as_str())
        .prefix(Prefix::new(prefix).expect("prefix"))
        .direct_connections(config.direct_connections);
    let options = ours::wait_for_replicas(options);
    let backend = RedisBackend::connect(&options, queue_name())
        .await
        .expect("connect the queue");
    Queue::try_new(queue_name(), backend).expect("the backend is bound to this queue")
}

/// One measured mode: prints its JSON line.
async fn measure(config: &Config, admin: &mut MultiplexedConnection, mode: Mode) {
    if config.add.run.warmup > 0 {
        let prefix = keyed_for(&config.add.run.url, unique_prefix(HARNESS, "warmup"));
        ours::add(queue(config, &prefix).await, mode, config.add.run.warmup).await;
        delete_prefix(admin, &prefix).await;
    }
    let prefix = keyed_for(&config.add.run.url, unique_prefix(HARNESS, mode.name()));
    let q = queue(config, &prefix).await;
    let meter = Meter::start(admin).await;
    config
        .add
        .placement
        .run(ours::add(q, mode, config.add.run.jobs))
        .await;
    finish(admin, meter, IMPL, &prefix, mode, config.add.run.jobs).await;
}

fn main() {
    let config = Config::from_env();
    runtime(config.add.placement.current_thread).block_on(async {
        let mut admin = admin(&admin_url(&config.add.run.url)).await;
        for &mode in &config.add.run.modes {
            measure(&config, &mut admin, mode).await;
        }
    });
}
