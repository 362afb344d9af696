//! Repeat settings carried by the jobs a job scheduler produces.

use std::collections::BTreeMap;
use std::time::Duration;

use bullmq_cron::{CronError, CronExpression, CronOptions};

use crate::options::{InvalidInstant, UnixMillis};

/// A job scheduler's schedule (Node.js's `RepeatOptions`), and `repeat` in the options of the
/// jobs it produces.
///
/// Users do not set this on `add` (Node.js 6 removed that); the scheduler fills it so the worker
/// that finishes an iteration can schedule the next one. Unknown keys written by other runtimes
/// are kept in `extra` and written back untouched.
///
/// Built with [`cron`](Self::cron) or [`every`](Self::every) and consuming setters; start and
/// end dates take Unix milliseconds, a [`SystemTime`](std::time::SystemTime) or a
/// [`chrono::DateTime`] (see [`UnixMillis`]):
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use bullmq_core::scheduling::RepeatOptions;
///
/// let nightly = RepeatOptions::cron("0 3 * * *")
///     .tz("Europe/London")
///     .limit(30)
///     .end_date(SystemTime::now() + Duration::from_secs(30 * 86_400));
/// let ticks = RepeatOptions::every(Duration::from_secs(5)).start_date(1_900_000_000_000_u64);
/// assert_eq!(ticks.start_at().map(|at| at.get()), Some(1_900_000_000_000));
/// let from_text = RepeatOptions::cron("0 3 * * *").start_date_iso("2030-01-31T09:00:00Z")?;
/// # let _ = (nightly, from_text);
/// # Ok::<(), bullmq_core::options::InvalidInstant>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepeatOptions {
    /// Cron pattern (`pattern`).
    pub pattern: Option<String>,
    /// Fixed interval (`every`).
    pub every: Option<Duration>,
    /// Maximum number of iterations (`limit`).
    pub limit: Option<u64>,
    /// Run the first iteration right away (`immediately`).
    pub immediately: Option<bool>,
    /// Iterations so far (`count`), kept by the scheduler in its jobs' options; an upsert
    /// ignores it and starts from 1 (as Node.js 6.7.6, where it is internal).
    pub count: Option<u64>,
    /// Offset of `every` iterations (`offset`).
    pub offset: Option<Duration>,
    /// First allowed run, Unix ms (`startDate`).
    pub start_date: Option<u64>,
    /// Last allowed run, Unix ms (`endDate`).
    pub end_date: Option<u64>,
    /// IANA time zone of the pattern (`tz`).
    pub tz: Option<String>,
    /// Previous run, Unix ms (`prevMillis`).
    pub prev_millis: Option<u64>,
    /// Legacy custom key (`key`).
    pub key: Option<String>,
    /// Keys this version does not know, kept verbatim.
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// JavaScript truthiness of a stored number (a timestamp, a count): 0 means none, as Node.js
/// reads a scheduler's `startDate`/`endDate`; shared by the stores that write them.
pub fn truthy(millis: Option<u64>) -> Option<u64> {
    millis.filter(|m| *m != 0)
}

impl RepeatOptions {
    /// A schedule on a cron `pattern` (Node.js's `pattern`).
    #[must_use]
    pub fn cron(pattern: impl Into<String>) -> Self {
        Self {
            pattern: Some(pattern.into()),
            ..Self::default()
        }
    }

    /// A schedule every `interval` (Node.js's `every`).
    #[must_use]
    pub fn every(interval: Duration) -> Self {
        Self {
            every: Some(interval),
            ..Self::default()
        }
    }

    /// Sets the IANA time zone of the pattern (`tz`).
    #[must_use]
    pub fn tz(mut self, tz: impl Into<String>) -> Self {
        self.tz = Some(tz.into());
        self
    }

    /// Sets the maximum number of iterations (`limit`).
    #[must_use]
    pub fn limit(mut self, limit: u64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Runs the first iteration right away (`immediately`).
    #[must_use]
    pub fn immediately(mut self, immediately: bool) -> Self {
        self.immediately = Some(immediately);
        self
    }

    /// Sets the offset of `every` iterations within their interval (`offset`).
    #[must_use]
    pub fn offset(mut self, offset: Duration) -> Self {
        self.offset = Some(offset);
        self
    }

    /// Sets the first allowed run (`startDate`).
    #[must_use]
    pub fn start_date(mut self, at: impl Into<UnixMillis>) -> Self {
        self.start_date = Some(at.into().get());
        self
    }

    /// Sets the last allowed run (`endDate`).
    #[must_use]
    pub fn end_date(mut self, at: impl Into<UnixMillis>) -> Self {
        self.end_date = Some(at.into().get());
        self
    }

    /// Sets the first allowed run from ISO 8601 text (`2030-01-31T09:00:00Z`), as Node.js
    /// takes a `startDate` string; see [`UnixMillis`]'s `FromStr` for the forms read.
    ///
    /// # Errors
    ///
    /// [`InvalidInstant`] when `text` is not such an instant.
    pub fn start_date_iso(self, text: &str) -> Result<Self, InvalidInstant> {
        Ok(self.start_date(text.parse::<UnixMillis>()?))
    }

    /// Sets the last allowed run from ISO 8601 text, as Node.js takes an `endDate` string.
    ///
    /// # Errors
    ///
    /// [`InvalidInstant`] when `text` is not such an instant.
    pub fn end_date_iso(self, text: &str) -> Result<Self, InvalidInstant> {
        Ok(self.end_date(text.parse::<UnixMillis>()?))
    }

    /// The first allowed run, typed; the `start_date` field holds it in Unix ms.
    #[must_use]
    pub fn start_at(&self) -> Option<UnixMillis> {
        self.start_date.map(UnixMillis::from)
    }

    /// The last allowed run, typed; the `end_date` field holds it in Unix ms.
    #[must_use]
    pub fn end_at(&self) -> Option<UnixMillis> {
        self.end_date.map(UnixMillis::from)
    }

    /// The cron-parser options of this schedule (zone, start and end dates), searching from
    /// `current` (Unix ms). The dates go as given, as Node.js passes its repeat options on:
    /// since cron-parser 5.10.4 (bullmq 6.7.6) a date of 0 is the epoch, so an end date of 0
    /// leaves no run.
    #[must_use]
    pub fn cron_options(&self, current: u64) -> CronOptions {
        CronOptions {
            tz: self.tz.clone().filter(|t| !t.is_empty()),
            current_date: Some(current),
            start_date: self.start_date,
            end_date: self.end_date,
            hash_seed: None,
        }
    }
}

/// The next run (Unix ms) of a cron `pattern` schedule after `millis`, exactly as Node.js's
/// default repeat strategy computes it: the search starts at the later of `millis` and the
/// start date, and `immediately` means `now`. `Ok(None)` when there is no pattern or no further
/// run (past the end date, or a pattern that never matches).
///
/// The one place both the worker (advancing a scheduler) and the job scheduler (upserting
/// one) get cron run times from.
///
/// # Errors
///
/// An invalid pattern or time zone (upstream throws these too).
pub fn next_cron_millis(
    schedule: &RepeatOptions,
    millis: u64,
    now: u64,
) -> Result<Option<u64>, CronError> {
    let Some(pattern) = schedule.pattern.as_deref().filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let current = truthy(schedule.start_date).map_or(millis, |s| s.max(millis));
    let mut cron = CronExpression::parse(pattern, &schedule.cron_options(current))?;
    if schedule.immediately == Some(true) {
        return Ok(Some(now));
    }
    // Upstream swallows the search's errors (end date passed, no match): no next run.
    Ok(cron.next_run().ok())
}
