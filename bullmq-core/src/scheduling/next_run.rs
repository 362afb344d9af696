//! A cron schedule's next run, as Node.js's default repeat strategy finds it.

use bullmq_cron::{CronError, CronExpression};

use crate::options::{RepeatOptions, UnixMillis};

/// JavaScript truthiness of a stored number (a timestamp, a count): 0 means none, as Node.js
/// reads a scheduler's `startDate`/`endDate`; shared by the stores that write them.
pub fn truthy(millis: Option<u64>) -> Option<u64> {
    millis.filter(|m| *m != 0)
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
    let start = schedule.start_at().map(UnixMillis::get);
    let current = truthy(start).map_or(millis, |s| s.max(millis));
    let mut cron = CronExpression::parse(pattern, &schedule.cron_options(current))?;
    if schedule.immediately == Some(true) {
        return Ok(Some(now));
    }
    // Upstream swallows the search's errors (end date passed, no match): no next run.
    Ok(cron.next_run().ok())
}
