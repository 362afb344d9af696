//! The worker benchmark's modes, progress and checks, and its JSON line, the same for ours
//! and the official port's.

use std::time::Duration;

use redis::aio::MultiplexedConnection;

use super::cli::named;
use super::jobs::QUEUE;
use super::measure::{Meter, PeakRss, PerJob, Usage};

/// How often the lists are checked while the worker runs.
pub const POLL: Duration = Duration::from_millis(2);

/// One measured setting.
#[derive(Clone, Copy, Debug)]
pub struct Mode {
    /// The worker's concurrency.
    pub concurrency: usize,
    /// `removeOnComplete: true` on every job.
    pub remove: bool,
    /// How long each job's processor sleeps (0: returns at once).
    pub work_ms: u64,
}

impl Mode {
    /// Every mode, in the order they run by default.
    pub const ALL: [Mode; 9] = [
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

    /// Counted by `--instructions` when no mode is named: instant, kept, concurrency ≤ 100.
    pub fn counted_by_default(self) -> bool {
        self.work_ms == 0 && !self.remove && self.concurrency <= 100
    }

    /// The mode's name on the command line and in the JSON lines.
    pub fn name(self) -> String {
        if self.work_ms > 0 {
            format!("sleep{}ms-c{}", self.work_ms, self.concurrency)
        } else {
            let keep = if self.remove { "remove" } else { "keep" };
            format!("instant-c{}-{keep}", self.concurrency)
        }
    }

    /// The mode named `s`; any other name stops the run.
    pub fn parse(s: &str) -> Mode {
        named(&Mode::ALL, Mode::name, s)
    }
}

/// The sizes (`cmd`: `LLEN`, `ZCARD`) of two keys of the queue under `prefix`, read in one
/// round trip.
async fn sizes(
    admin: &mut MultiplexedConnection,
    cmd: &str,
    prefix: &str,
    [a, b]: [&str; 2],
) -> (u64, u64) {
    redis::pipe()
        .cmd(cmd)
        .arg(format!("{prefix}:{QUEUE}:{a}"))
        .cmd(cmd)
        .arg(format!("{prefix}:{QUEUE}:{b}"))
        .query_async(admin)
        .await
        .expect(cmd)
}

/// `LLEN wait` + `LLEN active`: the jobs not finished yet.
pub async fn unfinished(admin: &mut MultiplexedConnection, prefix: &str) -> u64 {
    let (wait, active) = sizes(admin, "LLEN", prefix, ["wait", "active"]).await;
    wait + active
}

/// Waits, polling every [`POLL`], until the worker has finished every job, then stops
/// `meter` and reads the peak RSS: `VmHWM` where `rss_reset` (the high-water mark was reset
/// as the clock started), else the largest `VmRSS` sampled at each poll.
pub async fn drain(
    admin: &mut MultiplexedConnection,
    prefix: &str,
    meter: Meter,
    rss_reset: bool,
) -> Run {
    let mut rss = PeakRss::after_reset(rss_reset);
    while unfinished(admin, prefix).await > 0 {
        rss.sample();
        tokio::time::sleep(POLL).await;
    }
    let usage = meter.stop(admin).await;
    Run {
        usage,
        peak_rss_kb: rss.kb(),
    }
}

/// Checks, once the worker is closed, that no job failed and that the completed set holds
/// every job, or none when the mode removes them.
pub async fn check_finished(
    admin: &mut MultiplexedConnection,
    prefix: &str,
    mode: Mode,
    jobs: u64,
) {
    let (completed, failed) = sizes(admin, "ZCARD", prefix, ["completed", "failed"]).await;
    assert_finished(mode, jobs, completed, failed);
}

/// No job failed, and `completed` (the jobs kept completed) is every job, or none when the
/// mode removes them.
pub fn assert_finished(mode: Mode, jobs: u64, completed: u64, failed: u64) {
    assert_eq!(failed, 0, "no job failed");
    assert_eq!(
        completed,
        if mode.remove { 0 } else { jobs },
        "completed jobs kept"
    );
}

/// What one run measured (`U`: the store's [`Usage`]).
pub struct Run<U = Usage> {
    /// Time and CPU.
    pub usage: U,
    /// The process's peak resident set size while the worker ran.
    pub peak_rss_kb: u64,
}

/// The JSON line of one measured mode:
/// `{"impl":..,"mode":..,"jobs":..,"concurrency":..,"secs":..,"jobs_per_sec":..,"client_cpu_us_per_job":..,"redis_cpu_us_per_job":..,"peak_rss_kb":..}`.
pub fn line(implementation: &str, mode: Mode, jobs: u64, run: &Run<impl PerJob>) -> String {
    format!(
        r#"{{"impl":"{implementation}","mode":"{}","jobs":{jobs},"concurrency":{},{},"peak_rss_kb":{}}}"#,
        mode.name(),
        mode.concurrency,
        run.usage.per_job_fields(jobs),
        run.peak_rss_kb,
    )
}
