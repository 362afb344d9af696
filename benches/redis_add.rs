//! Add throughput on Redis: sequential `add` (one awaited call at a time), `add` from 8
//! concurrent tasks sharing one queue and its connection, and `add_bulk` in chunks of 1,000.
//!
//! `benches/official/` (the official Rust port) and `benches/node/add.mjs` (Node.js BullMQ
//! 6.7.0) run the same modes on the same jobs and print the same JSON lines;
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
//! (2,000), `REDIS_URL` (`redis://127.0.0.1:6379`), `BENCH_RUNTIME` (`multi_thread`, the
//! default, or `current_thread`), `BENCH_TASK` (`spawn`: run each mode in a spawned task, on a
//! runtime worker, instead of in `block_on` on the main thread as `#[tokio::main]` does),
//! `BENCH_DIRECT_CONNECTIONS` (`RedisOptions::direct_connections`; 0 sends every call through
//! redis-rs's multiplexed connection).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{BulkJob, JobOptions, Prefix, Queue, QueueName};
use redis::aio::MultiplexedConnection;
use serde::Serialize;

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-rs";
/// The queue every mode adds to (under its own prefix).
const QUEUE: &str = "bench";
/// Every job's name.
const JOB_NAME: &str = "bench-job";
/// Every job's payload: 100 bytes, the same in the three harnesses.
const PAYLOAD: &str = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. 0123456789abcd";
/// Tasks of the concurrent mode.
const CONCURRENCY: u64 = 8;
/// Jobs per `add_bulk` call.
const CHUNK: u64 = 1_000;

/// One job's data: `{"i": n, "payload": "..."}`.
#[derive(Serialize)]
struct Data {
    i: u64,
    payload: &'static str,
}

impl Data {
    fn new(i: u64) -> Self {
        Self {
            i,
            payload: PAYLOAD,
        }
    }
}

/// How jobs are added.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Sequential,
    Concurrent8,
    Bulk1000,
}

impl Mode {
    const ALL: [Mode; 3] = [Mode::Sequential, Mode::Concurrent8, Mode::Bulk1000];

    fn name(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::Concurrent8 => "concurrent8",
            Mode::Bulk1000 => "bulk1000",
        }
    }

    fn parse(s: &str) -> Mode {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .unwrap_or_else(|| panic!("unknown mode {s:?}: sequential, concurrent8 or bulk1000"))
    }
}

/// What to run, from the command line and the environment.
struct Config {
    url: String,
    jobs: u64,
    warmup: u64,
    modes: Vec<Mode>,
    current_thread: bool,
    /// Runs each mode in a spawned task (on a runtime worker) rather than in `block_on`.
    spawn: bool,
    /// `RedisOptions::direct_connections`.
    direct_connections: usize,
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number"))
    })
}

impl Config {
    /// Reads the arguments (`--mode NAME[,NAME]`, `--test`; cargo's own `--bench` and anything
    /// else are ignored) and the environment.
    fn from_env() -> Self {
        let mut test = false;
        let mut modes = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            if arg == "--test" {
                test = true;
            } else if arg == "--mode" {
                let list = args.next().expect("--mode needs a value");
                modes.extend(list.split(',').map(Mode::parse));
            } else if let Some(list) = arg.strip_prefix("--mode=") {
                modes.extend(list.split(',').map(Mode::parse));
            }
        }
        if modes.is_empty() {
            modes = Mode::ALL.to_vec();
        }
        let (jobs, warmup) = if test {
            (200, 0)
        } else {
            let jobs = env_u64("BENCH_JOBS", 20_000);
            (jobs, env_u64("BENCH_WARMUP", 2_000.min(jobs)))
        };
        Self {
            url: std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into()),
            jobs,
            warmup,
            modes,
            current_thread: std::env::var("BENCH_RUNTIME").is_ok_and(|v| v == "current_thread"),
            spawn: std::env::var("BENCH_TASK").is_ok_and(|v| v == "spawn"),
            direct_connections: usize::try_from(env_u64(
                "BENCH_DIRECT_CONNECTIONS",
                bullmq::redis::DEFAULT_DIRECT_CONNECTIONS as u64,
            ))
            .expect("BENCH_DIRECT_CONNECTIONS fits in usize"),
        }
    }
}

/// CPU time of this whole process (every thread, live or exited), with nanosecond
/// resolution: `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`, the same accounting Node.js's
/// `process.cpuUsage()` reads through `getrusage`.
fn process_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(ts.tv_sec).expect("CPU time is positive"),
        u32::try_from(ts.tv_nsec).expect("nanoseconds below 1e9"),
    )
}

/// Redis's own CPU time so far, in seconds: `used_cpu_sys + used_cpu_user` of `INFO cpu`.
async fn redis_cpu(admin: &mut MultiplexedConnection) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(admin)
        .await
        .expect("INFO cpu");
    info.lines()
        .filter_map(|l| {
            l.strip_prefix("used_cpu_sys:")
                .or_else(|| l.strip_prefix("used_cpu_user:"))
        })
        .map(|v| v.trim().parse::<f64>().expect("INFO cpu value"))
        .sum()
}

/// Deletes every key under `prefix`.
async fn delete_prefix(admin: &mut MultiplexedConnection, prefix: &str) {
    let mut cursor = 0_u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(admin)
            .await
            .expect("SCAN");
        if !keys.is_empty() {
            redis::cmd("UNLINK")
                .arg(&keys)
                .query_async::<()>(admin)
                .await
                .expect("UNLINK");
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
}

/// A prefix no other run uses.
fn unique_prefix(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos();
    format!("bench-add-rs-{tag}-{}-{nanos}", std::process::id())
}

async fn queue(config: &Config, prefix: &str) -> Queue<RedisBackend> {
    let name = QueueName::new(QUEUE).expect("queue name");
    let options = RedisOptions::new(config.url.as_str())
        .prefix(Prefix::new(prefix).expect("prefix"))
        .direct_connections(config.direct_connections);
    let backend = RedisBackend::connect(&options, name.clone())
        .await
        .expect("connect the queue");
    Queue::new(name, backend)
}

/// Adds `jobs` jobs in `mode`.
async fn run(queue: Queue<RedisBackend>, mode: Mode, jobs: u64) {
    match mode {
        Mode::Sequential => {
            for i in 0..jobs {
                queue
                    .add(JOB_NAME, &Data::new(i), JobOptions::default())
                    .await
                    .expect("add");
            }
        }
        Mode::Concurrent8 => {
            let queue = Arc::new(queue);
            let next = Arc::new(AtomicU64::new(0));
            let tasks: Vec<_> = (0..CONCURRENCY)
                .map(|_| {
                    let queue = Arc::clone(&queue);
                    let next = Arc::clone(&next);
                    tokio::spawn(async move {
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= jobs {
                                break;
                            }
                            queue
                                .add(JOB_NAME, &Data::new(i), JobOptions::default())
                                .await
                                .expect("add");
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("adding task");
            }
        }
        Mode::Bulk1000 => {
            let mut start = 0;
            while start < jobs {
                let end = (start + CHUNK).min(jobs);
                let chunk = (start..end)
                    .map(|i| BulkJob {
                        name: JOB_NAME.to_owned(),
                        data: Data::new(i),
                        opts: JobOptions::default(),
                    })
                    .collect();
                queue.add_bulk(chunk).await.expect("add_bulk");
                start = end;
            }
        }
    }
}

/// One measured mode: prints its JSON line.
async fn measure(config: &Config, admin: &mut MultiplexedConnection, mode: Mode) {
    if config.warmup > 0 {
        let prefix = unique_prefix("warmup");
        run(queue(config, &prefix).await, mode, config.warmup).await;
        delete_prefix(admin, &prefix).await;
    }
    let prefix = unique_prefix(mode.name());
    let q = queue(config, &prefix).await;
    let redis_before = redis_cpu(admin).await;
    let cpu_before = process_cpu();
    let start = Instant::now();
    if config.spawn {
        tokio::spawn(run(q, mode, config.jobs))
            .await
            .expect("the adding task");
    } else {
        run(q, mode, config.jobs).await;
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = (process_cpu() - cpu_before).as_secs_f64();
    let redis = redis_cpu(admin).await - redis_before;
    let waiting: u64 = redis::cmd("LLEN")
        .arg(format!("{prefix}:{QUEUE}:wait"))
        .query_async(admin)
        .await
        .expect("LLEN");
    delete_prefix(admin, &prefix).await;
    assert_eq!(waiting, config.jobs, "every job is waiting");
    #[allow(clippy::cast_precision_loss)]
    let jobs = config.jobs as f64;
    println!(
        r#"{{"impl":"{IMPL}","mode":"{}","jobs":{},"secs":{secs:.4},"jobs_per_sec":{:.1},"client_cpu_us_per_job":{:.3},"redis_cpu_us_per_job":{:.3}}}"#,
        mode.name(),
        config.jobs,
        jobs / secs,
        cpu * 1e6 / jobs,
        redis * 1e6 / jobs,
    );
}

fn main() {
    let config = Config::from_env();
    let runtime = if config.current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
    .enable_all()
    .build()
    .expect("tokio runtime");
    runtime.block_on(async {
        let client = redis::Client::open(config.url.as_str()).expect("REDIS_URL");
        let mut admin = client
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection");
        for &mode in &config.modes {
            measure(&config, &mut admin, mode).await;
        }
    });
}
