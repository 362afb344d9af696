//! The checks an upsert makes before anything is written. The iteration itself is planned by
//! `bullmq_core::scheduling::plan_iteration`, shared with the workers that advance schedulers.

use bullmq_core::options::UnixMillis;
use bullmq_core::scheduling::{RepeatOptions, truthy};
use bullmq_cron::CronExpression;

use super::SchedulerError;

/// Checks a schedule as an upsert does, before anything is written.
///
/// # Errors
///
/// Every and pattern together or neither (`every` of 0 counts as none), `immediately` with a
/// start date, an end date not after the start date, an invalid pattern or time zone.
pub fn validate_schedule(schedule: &RepeatOptions) -> Result<(), SchedulerError> {
    let every = schedule.every.filter(|e| !e.is_zero());
    let pattern = schedule.pattern.as_deref().filter(|p| !p.is_empty());
    match (every, pattern) {
        (Some(_), Some(_)) => return Err(SchedulerError::EveryAndPattern),
        (None, None) => return Err(SchedulerError::NoSchedule),
        _ => {}
    }
    let start = truthy(schedule.start_at().map(UnixMillis::get));
    let end = truthy(schedule.end_at().map(UnixMillis::get));
    if schedule.immediately == Some(true) && start.is_some() {
        return Err(SchedulerError::ImmediatelyWithStartDate);
    }
    if let (Some(start_date), Some(end_date)) = (start, end)
        && end_date <= start_date
    {
        return Err(SchedulerError::EndBeforeStart {
            start_date,
            end_date,
        });
    }
    if let Some(pattern) = pattern {
        CronExpression::parse(pattern, &schedule.cron_options(0))?;
    }
    Ok(())
}
