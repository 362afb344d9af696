//! The next iteration of a scheduler, computed as Node.js's `JobScheduler.upsertJobScheduler`
//! computes it, both when a producer upserts and when a worker finishes an iteration: when it
//! runs, and the options of the job it creates.

use std::time::Duration;

use bullmq_core::options::RepeatOptions;
use bullmq_core::{JobId, JobOptions};

use super::SchedulerError;
use crate::cron::{CronExpression, CronOptions};

/// What the next iteration is.
#[derive(Debug, Clone, PartialEq)]
pub struct IterationPlan {
    /// When it runs (Unix ms); `None` for `every`, whose slot the backend's script computes
    /// (from the previous slot, `offset` and `startDate`), as in Node.js.
    pub next_millis: Option<u64>,
    /// The options of the job to create: the template's plus `jobId`, `delay`, `timestamp`,
    /// `prevMillis`, `repeatJobKey` and `repeat` (with `count` and `offset`).
    pub delayed_job_opts: JobOptions,
}

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
    if schedule.immediately == Some(true) && truthy(schedule.start_date).is_some() {
        return Err(SchedulerError::ImmediatelyWithStartDate);
    }
    if let (Some(start_date), Some(end_date)) =
        (truthy(schedule.start_date), truthy(schedule.end_date))
        && end_date <= start_date
    {
        return Err(SchedulerError::EndBeforeStart {
            start_date,
            end_date,
        });
    }
    if let Some(pattern) = pattern {
        CronExpression::parse(pattern, &cron_options(schedule, 0))?;
    }
    Ok(())
}

/// JavaScript truthiness of a timestamp: 0 is none.
fn truthy(v: Option<u64>) -> Option<u64> {
    v.filter(|n| *n != 0)
}

fn cron_options(schedule: &RepeatOptions, current: u64) -> CronOptions {
    CronOptions {
        tz: schedule.tz.clone().filter(|t| !t.is_empty()),
        current_date: Some(current),
        start_date: truthy(schedule.start_date),
        end_date: truthy(schedule.end_date),
        hash_seed: None,
    }
}

/// The next run of a cron schedule after `millis`, as Node's default repeat strategy finds it
/// (from the later of `millis` and the start date; `immediately` means now). `None` when the
/// schedule has no further run (past its end date, or never matching).
///
/// # Errors
///
/// An invalid pattern or time zone.
pub fn next_cron_millis(
    schedule: &RepeatOptions,
    millis: u64,
    now: u64,
) -> Result<Option<u64>, SchedulerError> {
    let Some(pattern) = schedule.pattern.as_deref().filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let current = truthy(schedule.start_date).map_or(millis, |s| s.max(millis));
    let mut cron = CronExpression::parse(pattern, &cron_options(schedule, current))?;
    if schedule.immediately == Some(true) {
        return Ok(Some(now));
    }
    Ok(cron.next_run().ok())
}

/// Plans the next iteration of scheduler `scheduler_id`: `schedule` is the repeat options (a
/// job's `opts.repeat` when a worker advances it), `job_opts` the template's options (the
/// finished job's options for a worker, whose `prevMillis` is the slot that just ran).
///
/// `Ok(None)` when the schedule is over: its `limit` reached, its end date passed, or no
/// further cron match. This is the computation a worker needs after an iteration: with
/// [`super::JobScheduler::advance`] it also writes the next iteration.
///
/// # Errors
///
/// An invalid pattern or time zone.
pub fn plan_iteration(
    scheduler_id: &str,
    schedule: &RepeatOptions,
    job_opts: &JobOptions,
    now: u64,
) -> Result<Option<IterationPlan>, SchedulerError> {
    let iteration = schedule.count.filter(|c| *c != 0).map_or(1, |c| c + 1);
    if schedule.limit.is_some_and(|limit| iteration > limit) {
        return Ok(None);
    }
    if truthy(schedule.end_date).is_some_and(|end| now > end) {
        return Ok(None);
    }
    let created = now;
    let now = now.max(job_opts.prev_millis.unwrap_or_default());
    let every = schedule.every.filter(|e| !e.is_zero());
    let offset = every.and(schedule.offset).filter(|o| !o.is_zero());
    let next_millis = if every.is_some() {
        None
    } else {
        match next_cron_millis(schedule, now, now)? {
            Some(next) => Some(next.max(now)),
            None => return Ok(None),
        }
    };

    let mut opts = job_opts.clone();
    // `repeatJobKey` has no slot of its own in `JobOptions`: it travels as an extra key.
    opts.extra.insert(
        "repeatJobKey".to_owned(),
        serde_json::Value::String(scheduler_id.to_owned()),
    );
    opts.job_id = next_millis.map(|n| JobId::from(format!("repeat:{scheduler_id}:{n}")));
    // As in Node.js, the delay and timestamp are read from the clock, not from `prevMillis`.
    let delay = next_millis.map_or(0, |n| {
        (n + offset.map_or(0, duration_ms)).saturating_sub(created)
    });
    opts.delay = Some(Duration::from_millis(delay));
    opts.timestamp = Some(created);
    opts.prev_millis = next_millis;
    opts.repeat = Some(RepeatOptions {
        immediately: None,
        offset,
        count: Some(iteration),
        start_date: truthy(schedule.start_date),
        end_date: truthy(schedule.end_date),
        prev_millis: None,
        ..schedule.clone()
    });
    Ok(Some(IterationPlan {
        next_millis,
        delayed_job_opts: opts,
    }))
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
