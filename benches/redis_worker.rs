//! Worker throughput on Redis: how fast one worker empties a queue of pre-filled jobs.
//!
//! `benches/official/src/bin/worker.rs` (the official Rust port) and `benches/node/worker.mjs`
//! (Node.js BullMQ 6.7.0) run the same modes on the same jobs and print the same JSON lines;
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
//! `BENCH_WARMUP` (2,000), `REDIS_URL` (`redis://127.0.0.1:6379`), `BENCH_DIRECT_CONNECTIONS`
//! (the worker's `RedisOptions::direct_connections`; 0 sends every call through redis-rs's
//! multiplexed connection).

use std::time::{Duration, Instant};

use bullmq::core::backend::Lifecycle;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{ActiveJob, BulkJob, JobOptions, KeepJobs, Prefix, Queue, QueueName, Worker};
use bullmq::{CancellationToken, ProcessResult, WorkerOptions};
use redis::aio::MultiplexedConnection;
use serde::Serialize;

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-rs";
/// The queue every mode uses (under its own prefix).
const QUEUE: &str = "bench";
/// Every job's name.
const JOB_NAME: &str = "bench-job";
/// Every job's payload: 100 bytes, the same in the three harnesses.
const PAYLOAD: &str = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. 0123456789abcd";
/// Jobs per `add_bulk` call.
const CHUNK: u64 = 1_000;
/// How often the lists are checked while the worker runs.
const POLL: Duration = Duration::from_millis(2);

/// One job's data: `{"i": n, "payload": "..."}`.
#[derive(Serialize)]
struct Data {
    i: u64,
    payload: &'static str,
}

/// One measured setting.
#[derive(Clone, Copy, Debug)]
struct Mode {
    concurrency: usize,
    /// `removeOnComplete: true` on every job.
    remove: bool,
    /// How long each job's processor sleeps (0: returns at once).
    work_ms: u64,
}

impl Mode {
    const ALL: [Mode; 9] = [
        Mode::instant(1, false),
        Mode::instant(1, true),
        Mode::instant(10, false),
        Mode::instant(10, true),
        Mode::instant(100, false),
        Mode::instant(100, true),
        Mode::instant(500, false),
        Mode::instant(500, true),
        Mode {
            concurrency: 100,
            remove: false,
            work_ms: 10,
        },
    ];

    const fn instant(concurrency: usize, remove: bool) -> Self {
        Self {
            concurrency,
            remove,
            work_ms: 0,
        }
    }

    fn name(self) -> String {
        if self.work_ms > 0 {
            format!("sleep{}ms-c{}", self.work_ms, self.concurrency)
        } else {
            let keep = if self.remove { "remove" } else { "keep" };
            format!("instant-c{}-{keep}", self.concurrency)
        }
    }

    fn parse(s: &str) -> Mode {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .unwrap_or_else(|| {
                let names: Vec<_> = Mode::ALL.iter().map(|m| m.name()).collect();
                panic!("unknown mode {s:?}: {}", names.join(", "))
            })
    }
}

/// What to run, from the command line and the environment.
struct Config {
    url: String,
    jobs: u64,
    warmup: u64,
    modes: Vec<Mode>,
    /// The worker's `RedisOptions::direct_connections`.
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
            direct_connections: usize::try_from(env_u64(
                "BENCH_DIRECT_CONNECTIONS",
                bullmq::redis::DEFAULT_DIRECT_CONNECTIONS as u64,
            ))
            .expect("BENCH_DIRECT_CONNECTIONS fits in usize"),
        }
    }
}

/// CPU time of this whole process (every thread), with nanosecond resolution.
fn process_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(ts.tv_sec).expect("CPU time is positive"),
        u32::try_from(ts.tv_nsec).expect("nanoseconds below 1e9"),
    )
}

/// Resets the process's peak resident set size (Linux ≥ 4.0); false where refused.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A `kB` field of `/proc/self/status` (`VmHWM`, `VmRSS`).
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
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
    format!("bench-worker-rs-{tag}-{}-{nanos}", std::process::id())
}

async fn backend(config: &Config, prefix: &str) -> RedisBackend {
    let options = RedisOptions::new(config.url.as_str())
        .prefix(Prefix::new(prefix).expect("prefix"))
        .direct_connections(config.direct_connections);
    RedisBackend::connect(&options, QueueName::new(QUEUE).expect("queue name"))
        .await
        .expect("connect")
}

/// Adds `jobs` jobs under `prefix`, `add_bulk` in chunks.
async fn fill(config: &Config, prefix: &str, mode: Mode, jobs: u64) {
    let queue = Queue::new(
        QueueName::new(QUEUE).expect("queue name"),
        backend(config, prefix).await,
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
                data: Data {
                    i,
                    payload: PAYLOAD,
                },
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

/// `LLEN wait` + `LLEN active`: the jobs not finished yet.
async fn unfinished(admin: &mut MultiplexedConnection, prefix: &str) -> u64 {
    let (wait, active): (u64, u64) = redis::pipe()
        .cmd("LLEN")
        .arg(format!("{prefix}:{QUEUE}:wait"))
        .cmd("LLEN")
        .arg(format!("{prefix}:{QUEUE}:active"))
        .query_async(admin)
        .await
        .expect("LLEN");
    wait + active
}

/// What one run measured.
struct Run {
    secs: f64,
    cpu: f64,
    redis: f64,
    peak_rss_kb: u64,
}

/// Pre-fills `jobs` jobs under `prefix`, then times a worker processing them all.
async fn run(
    config: &Config,
    admin: &mut MultiplexedConnection,
    prefix: &str,
    mode: Mode,
    jobs: u64,
) -> Run {
    fill(config, prefix, mode, jobs).await;
    let work = Duration::from_millis(mode.work_ms);
    let options = WorkerOptions::new()
        .concurrency(mode.concurrency)
        .autorun(false);
    let worker = Worker::new(
        QueueName::new(QUEUE).expect("queue name"),
        backend(config, prefix).await,
        options,
        move |_job: ActiveJob<RedisBackend>, _cancel: CancellationToken| async move {
            if !work.is_zero() {
                tokio::time::sleep(work).await;
            }
            ProcessResult::Ok(serde_json::Value::Null)
        },
    )
    .await
    .expect("the worker");
    let rss_reset = reset_peak_rss();
    let redis_before = redis_cpu(admin).await;
    let cpu_before = process_cpu();
    let start = Instant::now();
    worker.run().expect("run the worker");
    let mut rss_max = 0;
    while unfinished(admin, prefix).await > 0 {
        if !rss_reset {
            rss_max = rss_max.max(status_kb("VmRSS"));
        }
        tokio::time::sleep(POLL).await;
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = (process_cpu() - cpu_before).as_secs_f64();
    let redis = redis_cpu(admin).await - redis_before;
    let peak_rss_kb = if rss_reset {
        status_kb("VmHWM")
    } else {
        rss_max
    };
    worker.close().await;
    let (completed, failed): (u64, u64) = redis::pipe()
        .cmd("ZCARD")
        .arg(format!("{prefix}:{QUEUE}:completed"))
        .cmd("ZCARD")
        .arg(format!("{prefix}:{QUEUE}:failed"))
        .query_async(admin)
        .await
        .expect("ZCARD");
    assert_eq!(failed, 0, "no job failed");
    assert_eq!(
        completed,
        if mode.remove { 0 } else { jobs },
        "completed jobs kept"
    );
    Run {
        secs,
        cpu,
        redis,
        peak_rss_kb,
    }
}

/// One measured mode: prints its JSON line.
async fn measure(config: &Config, admin: &mut MultiplexedConnection, mode: Mode) {
    if config.warmup > 0 {
        let prefix = unique_prefix("warmup");
        run(config, admin, &prefix, mode, config.warmup).await;
        delete_prefix(admin, &prefix).await;
    }
    let prefix = unique_prefix(&mode.name());
    let r = run(config, admin, &prefix, mode, config.jobs).await;
    delete_prefix(admin, &prefix).await;
    #[allow(clippy::cast_precision_loss)]
    let jobs = config.jobs as f64;
    println!(
        r#"{{"impl":"{IMPL}","mode":"{}","jobs":{},"concurrency":{},"secs":{:.4},"jobs_per_sec":{:.1},"client_cpu_us_per_job":{:.3},"redis_cpu_us_per_job":{:.3},"peak_rss_kb":{}}}"#,
        mode.name(),
        config.jobs,
        mode.concurrency,
        r.secs,
        jobs / r.secs,
        r.cpu * 1e6 / jobs,
        r.redis * 1e6 / jobs,
        r.peak_rss_kb,
    );
}

fn main() {
    let config = Config::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
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
