//! The add benchmark's modes and JSON line, the same for ours and the official port's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redis::aio::MultiplexedConnection;

use super::cli::{Settings, named};
use super::jobs::QUEUE;
use super::measure::{Meter, PerJob, delete_prefix};

/// Tasks of the concurrent mode.
pub const CONCURRENCY: u64 = 8;

/// How jobs are added.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// One awaited `add` at a time.
    Sequential,
    /// `add` from [`CONCURRENCY`] tasks sharing one queue and its connection.
    Concurrent8,
    /// `add_bulk` in chunks of [`super::jobs::CHUNK`], one chunk at a time.
    Bulk1000,
}

impl Mode {
    /// Every mode, in the order they run by default.
    pub const ALL: [Mode; 3] = [Mode::Sequential, Mode::Concurrent8, Mode::Bulk1000];

    /// The mode's name on the command line and in the JSON lines.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::Concurrent8 => "concurrent8",
            Mode::Bulk1000 => "bulk1000",
        }
    }

    /// The mode named `s`; any other name stops the run.
    pub fn parse(s: &str) -> Mode {
        named(&Mode::ALL, Mode::name, s)
    }
}

/// The JSON line of one measured mode:
/// `{"impl":..,"mode":..,"jobs":..,"secs":..,"jobs_per_sec":..,"client_cpu_us_per_job":..,"redis_cpu_us_per_job":..}`
/// (on PostgreSQL, `usage`'s own fields: see `postgres.rs`).
pub fn line(implementation: &str, mode: Mode, jobs: u64, usage: &impl PerJob) -> String {
    format!(
        r#"{{"impl":"{implementation}","mode":"{}","jobs":{jobs},{}}}"#,
        mode.name(),
        usage.per_job_fields(jobs),
    )
}

/// What an add harness runs and where, from the command line and the environment.
pub struct Config {
    pub run: Settings<Mode>,
    pub placement: Placement,
}

impl Config {
    /// Reads the arguments (`--mode NAME[,NAME]`, `--test`; cargo's own `--bench` and anything
    /// else are ignored) and the environment.
    pub fn from_env() -> Self {
        Self {
            run: Settings::from_env(&Mode::ALL, Mode::parse),
            placement: Placement::from_env(),
        }
    }
}

/// Where an add harness runs each mode: `BENCH_RUNTIME` (`current_thread`, else the
/// multi-threaded runtime) and `BENCH_TASK` (`spawn`: in a spawned task, on a runtime worker,
/// rather than in `block_on` on the main thread as `#[tokio::main]` does).
pub struct Placement {
    pub current_thread: bool,
    pub spawn: bool,
}

impl Placement {
    /// Reads the environment.
    pub fn from_env() -> Self {
        Self {
            current_thread: std::env::var("BENCH_RUNTIME").is_ok_and(|v| v == "current_thread"),
            spawn: std::env::var("BENCH_TASK").is_ok_and(|v| v == "spawn"),
        }
    }

    /// Runs `adding` where `BENCH_TASK` says.
    pub async fn run(&self, adding: impl Future<Output = ()> + Send + 'static) {
        if self.spawn {
            tokio::spawn(adding).await.expect("the adding task");
        } else {
            adding.await;
        }
    }
}

/// The concurrent mode for any client: [`CONCURRENCY`] tasks, each calling `add(i)` with the
/// next index not yet taken until `jobs` are added.
pub async fn concurrently<F, Fut>(jobs: u64, add: F)
where
    F: Fn(u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let next = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let next = Arc::clone(&next);
            let add = add.clone();
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= jobs {
                        break;
                    }
                    add(i).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("adding task");
    }
}

/// Ends a measured mode once its `jobs` are added under `prefix`: stops `meter`, checks that
/// every job waits, deletes the keys and prints the mode's line.
pub async fn finish(
    admin: &mut MultiplexedConnection,
    meter: Meter,
    implementation: &str,
    prefix: &str,
    mode: Mode,
    jobs: u64,
) {
    let usage = meter.stop(admin).await;
    let waiting: u64 = redis::cmd("LLEN")
        .arg(format!("{prefix}:{QUEUE}:wait"))
        .query_async(admin)
        .await
        .expect("LLEN");
    delete_prefix(admin, prefix).await;
    assert_eq!(waiting, jobs, "every job is waiting");
    println!("{}", line(implementation, mode, jobs, &usage));
}
