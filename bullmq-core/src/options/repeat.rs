//! Repeat settings carried by the jobs a job scheduler produces.

use std::collections::BTreeMap;
use std::time::Duration;

use bullmq_cron::{CronError, CronExpression, CronOptions};

/// `repeat` in a scheduler-produced job's options.
///
/// Users do not set this on `add` (Node.js 6 removed that); the scheduler fills it so the worker
/// that finishes an iteration can schedule the next one. Unknown keys written by other runtimes
/// are kept in `extra` and written back untouched.
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
    /// Iterations so far (`count`).
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

/// JavaScript truthiness of a stored number (a timestamp, a count): 0 means none.
pub(crate) fn truthy(millis: Option<u64>) -> Option<u64> {
    millis.filter(|m| *m != 0)
}

impl RepeatOptions {
    /// The cron-parser options of this schedule (zone, start and end dates), searching from
    /// `current` (Unix ms).
    #[must_use]
    pub fn cron_options(&self, current: u64) -> CronOptions {
        CronOptions {
            tz: self.tz.clone().filter(|t| !t.is_empty()),
            current_date: Some(current),
            start_date: truthy(self.start_date),
            end_date: truthy(self.end_date),
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
