//! A fleet of workers in one process (issue 21): N workers, each at concurrency 500, on one
//! queue, what they process together and what each costs in memory and connections.
//!
//! `benches/node/fleet.mjs` (Node.js BullMQ 6.7.6) runs the same modes on the same jobs and
//! prints the same JSON lines; `benches/compare-fleet.sh` runs both, interleaved, on a private
//! Redis and prints the comparison.
//!
//! A mode is a phase, a number of workers and how they reach Redis, named
//! `{busy|idle}-w<N>-{own|shared}`:
//!
//! - `own`: each worker on its own `RedisBackend::connect`; `shared`: every worker on a clone
//!   of one backend (what a clone shares, its blocking connection included, is the backend's
//!   business: this bench only shows the cost);
//! - `busy` (N = 1, 5, 10 by default): `BENCH_JOBS` jobs (20,000) are pre-filled with
//!   `add_bulk` (not timed, after an unmeasured warm-up of `BENCH_WARMUP` jobs on another
//!   prefix), the N workers are built with `autorun` off, then the clock starts, they all run,
//!   and every 2 ms a separate connection reads the lengths of `wait` and `active`; the clock
//!   stops when both are empty. Processors return at once, jobs are kept completed. Printed:
//!   jobs/s, client and Redis CPU per job (as `redis_worker`), the process's RSS with the
//!   workers built but not running (`rss_idle_kb`) and its peak while they ran (`peak_rss_kb`,
//!   `VmHWM` reset as the clock starts);
//! - `idle` (N = 1, 10, 100 by default): nothing is added. The process's `VmRSS` and the
//!   server's `connected_clients` are read, then N workers are built and run, and once the
//!   server counts N more blocked clients (every worker waiting for a job; at most 10 s, the
//!   count reached is printed as `blocked`), both are read again:
//!   `kb_per_worker = (RSS_N - RSS_0) / N` and `connections_per_worker`. The RSS is also
//!   split, as `/proc/self/status` does, into anonymous pages (`rss_anon_*`, `anon_kb_per_worker`:
//!   heap, allocator arenas, thread stacks, this process's own) and file-backed ones
//!   (`rss_file_*`, `file_kb_per_worker`: the executable's code and read-only data touched for
//!   the first time, shared with every process running it), with the process's thread count
//!   (`threads_before`, `threads_after`); `BENCH_SMAPS=<path>` also copies `/proc/self/smaps`
//!   to `<path>.before` and `<path>.after`, to see which mapping grew. The connection count
//!   is the server's, so it is exact only on a server nothing else uses (the compare script
//!   starts one).
//!
//! Each mode runs in a fresh process of its own (this executable run again with `--child`),
//! so that memory one mode freed, and the allocator kept, does not hide the next one's cost.
//! One line per mode:
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"busy-w5-own","phase":"busy","sharing":"own","workers":5,
//!  "concurrency":500,"jobs":20000,"secs":..,"jobs_per_sec":..,"client_cpu_us_per_job":..,
//!  "redis_cpu_us_per_job":..,"rss_idle_kb":..,"peak_rss_kb":..}
//! {"impl":"bullmq-rs","mode":"idle-w10-own","phase":"idle","sharing":"own","workers":10,
//!  "concurrency":500,"rss_before_kb":..,"rss_after_kb":..,"kb_per_worker":..,
//!  "connections_before":..,"connections_after":..,"connections_per_worker":..,"blocked":10,
//!  "rss_anon_before_kb":..,"rss_anon_after_kb":..,"anon_kb_per_worker":..,
//!  "rss_file_before_kb":..,"rss_file_after_kb":..,"file_kb_per_worker":..,
//!  "threads_before":..,"threads_after":..}
//! ```
//!
//! Run: `cargo bench --bench redis_fleet [-- --mode busy-own,idle-own,busy-shared,idle-shared]
//! [--workers N[,N]]`; `--workers` replaces both phases' defaults. `-- --test` is CI's smoke
//! run: 200 jobs, no warm-up, N = 1 and 5 (busy) and 1 and 10 (idle), own backends only.
//! Env: `REDIS_URL` (`redis://127.0.0.1:6379`), `BENCH_JOBS` (20,000), `BENCH_WARMUP`
//! (2,000).

#[path = "support/mod.rs"]
mod support;

#[path = "support/ours.rs"]
mod ours;

use std::process::Command;
use std::time::{Duration, Instant};

use bullmq::Prefix;
use bullmq::redis::{RedisBackend, RedisOptions};
use redis::aio::MultiplexedConnection;

use ours::queue_name;
use support::cli::{Args, Settings, flag_values, has_flag, named, runtime};
use support::measure::{
    Meter, Resident, admin, delete_prefix, info, info_number, reset_peak_rss, status_kb,
    unique_prefix,
};
use support::worker::{self as worker_bench, check_finished, drain};

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-rs";
/// The first part of every key prefix.
const HARNESS: &str = "bench-fleet-rs";
/// Every worker's concurrency.
const CONCURRENCY: usize = 500;
/// How long the idle phase waits for every worker to block.
const BLOCK_WAIT: Duration = Duration::from_secs(10);
/// How often the idle phase checks the blocked clients.
const BLOCK_POLL: Duration = Duration::from_millis(10);

/// What is measured: throughput, or the cost of idle workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Busy,
    Idle,
}

/// How the workers reach Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sharing {
    /// One `RedisBackend::connect` per worker.
    Own,
    /// Clones of one backend.
    Shared,
}

/// A kind of run, before the number of workers is chosen (`--mode`).
#[derive(Clone, Copy, Debug)]
struct Kind {
    phase: Phase,
    sharing: Sharing,
}

impl Kind {
    /// Every kind, in the order they run by default.
    const ALL: [Kind; 4] = [
        Kind::new(Phase::Busy, Sharing::Own),
        Kind::new(Phase::Idle, Sharing::Own),
        Kind::new(Phase::Busy, Sharing::Shared),
        Kind::new(Phase::Idle, Sharing::Shared),
    ];

    const fn new(phase: Phase, sharing: Sharing) -> Self {
        Self { phase, sharing }
    }

    fn phase_name(self) -> &'static str {
        match self.phase {
            Phase::Busy => "busy",
            Phase::Idle => "idle",
        }
    }

    fn sharing_name(self) -> &'static str {
        match self.sharing {
            Sharing::Own => "own",
            Sharing::Shared => "shared",
        }
    }

    /// `busy-own`, `idle-shared`, …: the name `--mode` takes.
    fn name(self) -> String {
        format!("{}-{}", self.phase_name(), self.sharing_name())
    }

    /// The kind named `s`; any other name stops the run.
    fn parse(s: &str) -> Kind {
        named(&Kind::ALL, Kind::name, s)
    }

    /// The numbers of workers run by default (a smoke run's are smaller).
    fn default_workers(self, test: bool) -> &'static [usize] {
        match (self.phase, test) {
            (Phase::Busy, false) => &[1, 5, 10],
            (Phase::Busy, true) => &[1, 5],
            (Phase::Idle, false) => &[1, 10, 100],
            (Phase::Idle, true) => &[1, 10],
        }
    }
}

/// One measured run: a kind with its number of workers.
#[derive(Clone, Copy, Debug)]
struct Mode {
    kind: Kind,
    workers: usize,
}

impl Mode {
    /// `busy-w5-own`: the mode's name in the JSON lines.
    fn name(self) -> String {
        format!(
            "{}-w{}-{}",
            self.kind.phase_name(),
            self.workers,
            self.kind.sharing_name()
        )
    }

    /// The worker benchmark's mode every worker runs: instant jobs, kept, concurrency 500.
    fn worker_mode(self) -> worker_bench::Mode {
        worker_bench::Mode {
            concurrency: CONCURRENCY,
            remove: false,
            work_ms: 0,
        }
    }
}

/// What to run, from the command line and the environment.
struct Config {
    run: Settings<Kind>,
    /// `--test`.
    test: bool,
    /// `--child`: run the one mode named here, in this process.
    child: bool,
    /// `--workers N[,N]`, none when each phase's defaults are wanted.
    workers: Vec<usize>,
}

impl Config {
    /// Reads the arguments (`--mode KIND[,KIND]`, `--workers N[,N]`, `--test`, `--child`;
    /// cargo's own `--bench` and anything else are ignored) and the environment.
    fn from_env() -> Self {
        let mut run = Settings::from_env(&Kind::ALL, Kind::parse);
        let test = Args::parse().test;
        if test && Args::parse().modes.is_empty() {
            run.modes.retain(|k| k.sharing == Sharing::Own);
        }
        let workers = flag_values("--workers")
            .iter()
            .map(|n| {
                n.parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| panic!("--workers takes counts above 0, not {n:?}"))
            })
            .collect();
        Self {
            run,
            test,
            child: has_flag("--child"),
            workers,
        }
    }

    /// Every run, in order.
    fn modes(&self) -> Vec<Mode> {
        let mut modes = Vec::new();
        for &kind in &self.run.modes {
            let counts = if self.workers.is_empty() {
                kind.default_workers(self.test)
            } else {
                &self.workers
            };
            modes.extend(counts.iter().map(|&workers| Mode { kind, workers }));
        }
        modes
    }
}

/// A backend of its own on the bench's queue under `prefix`.
async fn backend(config: &Config, prefix: &str) -> RedisBackend {
    let options =
        RedisOptions::new(config.run.url.as_str()).prefix(Prefix::new(prefix).expect("prefix"));
    RedisBackend::connect(&options, queue_name())
        .await
        .expect("connect")
}

/// The mode's workers, built but not running.
async fn workers(
    config: &Config,
    prefix: &str,
    mode: Mode,
) -> Vec<bullmq::Worker<RedisBackend, impl bullmq::Processor<RedisBackend>>> {
    let shared = match mode.kind.sharing {
        Sharing::Own => None,
        Sharing::Shared => Some(backend(config, prefix).await),
    };
    let mut built = Vec::with_capacity(mode.workers);
    for _ in 0..mode.workers {
        let backend = match &shared {
            Some(shared) => shared.clone(),
            None => backend(config, prefix).await,
        };
        built.push(ours::worker(backend, mode.worker_mode(), None).await);
    }
    built
}

/// A numeric field of one `INFO` section.
async fn info_field(admin: &mut MultiplexedConnection, section: &str, field: &str) -> u64 {
    info_number(&info(admin, section).await, field)
        .unwrap_or_else(|| panic!("{field} in INFO {section}"))
}

/// Pre-fills `jobs` jobs under `prefix`, then times the mode's workers processing them all;
/// returns the JSON fields after `"jobs":..,`.
async fn busy_run(
    config: &Config,
    admin: &mut MultiplexedConnection,
    prefix: &str,
    mode: Mode,
    jobs: u64,
) -> String {
    ours::fill(backend(config, prefix).await, mode.worker_mode(), jobs).await;
    let fleet = workers(config, prefix, mode).await;
    let rss_idle_kb = status_kb("VmRSS");
    let rss_reset = reset_peak_rss();
    let meter = Meter::start(admin).await;
    for worker in &fleet {
        worker.run().expect("run the worker");
    }
    let measured = drain(admin, prefix, meter, rss_reset).await;
    for worker in &fleet {
        worker.close().await;
    }
    check_finished(admin, prefix, mode.worker_mode(), jobs).await;
    format!(
        r#"{},"rss_idle_kb":{rss_idle_kb},"peak_rss_kb":{}"#,
        support::measure::PerJob::per_job_fields(&measured.usage, jobs),
        measured.peak_rss_kb,
    )
}

/// The busy phase: its JSON line.
async fn busy(config: &Config, admin: &mut MultiplexedConnection, mode: Mode) -> String {
    if config.run.warmup > 0 {
        let prefix = unique_prefix(HARNESS, "warmup");
        busy_run(config, admin, &prefix, mode, config.run.warmup).await;
        delete_prefix(admin, &prefix).await;
    }
    let prefix = unique_prefix(HARNESS, &mode.name());
    let jobs = config.run.jobs;
    let fields = busy_run(config, admin, &prefix, mode, jobs).await;
    delete_prefix(admin, &prefix).await;
    format!(r#""jobs":{jobs},{fields}"#)
}

/// The idle phase: builds and runs the mode's workers on an empty queue, and once they all
/// wait for a job, returns the JSON fields of what they added.
async fn idle(config: &Config, admin: &mut MultiplexedConnection, mode: Mode) -> String {
    let prefix = unique_prefix(HARNESS, &mode.name());
    let blocked_before = info_field(admin, "clients", "blocked_clients").await;
    let connections_before = info_field(admin, "clients", "connected_clients").await;
    let before = Resident::read("before");
    let fleet = workers(config, &prefix, mode).await;
    for worker in &fleet {
        worker.run().expect("run the worker");
    }
    let started = Instant::now();
    let mut blocked;
    loop {
        blocked = info_field(admin, "clients", "blocked_clients")
            .await
            .saturating_sub(blocked_before);
        if blocked >= mode.workers as u64 || started.elapsed() > BLOCK_WAIT {
            break;
        }
        tokio::time::sleep(BLOCK_POLL).await;
    }
    let after = Resident::read("after");
    let connections_after = info_field(admin, "clients", "connected_clients").await;
    for worker in &fleet {
        worker.close().await;
    }
    delete_prefix(admin, &prefix).await;
    #[allow(clippy::cast_precision_loss)]
    let per = |before: u64, after: u64| (after as f64 - before as f64) / mode.workers as f64;
    format!(
        concat!(
            r#""rss_before_kb":{},"rss_after_kb":{},"kb_per_worker":{:.1},"#,
            r#""connections_before":{},"connections_after":{},"connections_per_worker":{:.2},"#,
            r#""blocked":{},"#,
            r#""rss_anon_before_kb":{},"rss_anon_after_kb":{},"anon_kb_per_worker":{:.1},"#,
            r#""rss_file_before_kb":{},"rss_file_after_kb":{},"file_kb_per_worker":{:.1},"#,
            r#""threads_before":{},"threads_after":{}"#
        ),
        before.rss_kb,
        after.rss_kb,
        per(before.rss_kb, after.rss_kb),
        connections_before,
        connections_after,
        per(connections_before, connections_after),
        blocked,
        before.anon_kb,
        after.anon_kb,
        per(before.anon_kb, after.anon_kb),
        before.file_kb,
        after.file_kb,
        per(before.file_kb, after.file_kb),
        before.threads,
        after.threads,
    )
}

/// Runs one mode in this process and prints its line.
fn child(config: &Config, mode: Mode) {
    runtime(false).block_on(async {
        let mut admin = admin(&config.run.url).await;
        let fields = match mode.kind.phase {
            Phase::Busy => busy(config, &mut admin, mode).await,
            Phase::Idle => idle(config, &mut admin, mode).await,
        };
        println!(
            r#"{{"impl":"{IMPL}","mode":"{}","phase":"{}","sharing":"{}","workers":{},"concurrency":{CONCURRENCY},{fields}}}"#,
            mode.name(),
            mode.kind.phase_name(),
            mode.kind.sharing_name(),
            mode.workers,
        );
    });
}

/// Runs each mode in a fresh process: this executable again, with `--child`.
fn parent(config: &Config) {
    let me = std::env::current_exe().expect("this executable's path");
    for mode in config.modes() {
        let mut cmd = Command::new(&me);
        cmd.args(["--child", "--mode", &mode.kind.name(), "--workers"])
            .arg(mode.workers.to_string());
        if config.test {
            cmd.arg("--test");
        }
        let status = cmd.status().expect("run a mode's process");
        assert!(status.success(), "mode {} failed: {status}", mode.name());
    }
}

fn main() {
    let config = Config::from_env();
    if config.child {
        let modes = config.modes();
        assert_eq!(modes.len(), 1, "--child runs one mode");
        child(&config, modes[0]);
    } else {
        parent(&config);
    }
}
