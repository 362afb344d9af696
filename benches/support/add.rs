//! The add benchmark's modes and JSON line, the same for ours and the official port's.

use super::measure::PerJob;

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
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .unwrap_or_else(|| panic!("unknown mode {s:?}: sequential, concurrent8 or bulk1000"))
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
