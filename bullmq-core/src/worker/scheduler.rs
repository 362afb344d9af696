//! Advancing a job scheduler when the worker takes one of its jobs (upstream:
//! `Worker#nextJobFromJobData` calling `JobScheduler#upsertJobScheduler` with
//! `override: false`): the next iteration is added, once, by the job that is about to run.
//!
//! For `every` schedules the store computes the next run (`updateJobScheduler`), so nothing
//! but the iteration's options is needed here. Cron `pattern` schedules need a
//! [`RepeatStrategy`] that gives the next run (upstream: `settings.repeatStrategy`, by default
//! `cron-parser`); a worker built without one reports each such job's advancement as an error
//! and still runs the job. The scheduler feature installs its cron engine through
//! [`WorkerBuilder::repeat_strategy`](super::WorkerBuilder::repeat_strategy).

use std::sync::Arc;
use std::time::Duration;

use super::shared::Shared;
use crate::backend::{Backend, NextIterationArgs};
use crate::options::{RepeatOptions, ValidationError};
use crate::{Error, Job, JobId, Result};

/// Gives the next run (Unix ms) of a `pattern` schedule after `millis`, or `None` when there
/// is none (upstream: `RepeatStrategy(millis, opts, name)`).
pub type RepeatStrategy = Arc<dyn Fn(u64, &RepeatOptions, &str) -> Option<u64> + Send + Sync>;

/// Adds the next iteration of the scheduler that produced `job`, if it did; failures are
/// reported as error events (as upstream emits them) and never stop the job from running.
pub(crate) async fn advance<B: Backend>(shared: &Shared<B>, job: &Job) {
    let Some(scheduler_id) = &job.repeat_job_key else {
        return;
    };
    if let Err(err) = advance_scheduler(shared, job, scheduler_id).await {
        let err = match err {
            Error::Invalid(v) => Error::Invalid(ValidationError::single(
                "repeat",
                "repeat",
                format!("Failed to add repeatable job for next iteration: {v}"),
            )),
            other => other,
        };
        shared.emit_error(err);
    }
}

async fn advance_scheduler<B: Backend>(
    shared: &Shared<B>,
    job: &Job,
    scheduler_id: &str,
) -> Result<Option<JobId>> {
    let backend = shared.queue.backend();
    if is_legacy_repeat_key(scheduler_id) && !backend.is_job_scheduler(scheduler_id).await? {
        return Err(invalid(format!(
            "Legacy repeatable job metadata is not supported in BullMQ v6 (key: \
             \"{scheduler_id}\"). Migrate legacy repeatable jobs to Job Schedulers before \
             upgrading."
        )));
    }
    let Some(repeat) = &job.opts.repeat else {
        // Upstream throws here and leaves the job active, never run; we report and run it.
        return Err(invalid(format!(
            "job {} names scheduler {scheduler_id:?} but has no repeat options",
            job.id
        )));
    };
    match (&repeat.pattern, repeat.every) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "Both .pattern and .every options are defined for this repeatable job".into(),
            ));
        }
        (None, None) => {
            return Err(invalid(
                "Either .pattern or .every options must be defined for this repeatable job".into(),
            ));
        }
        _ => {}
    }
    let iteration = repeat.count.map_or(1, |c| c.saturating_add(1));
    if repeat.limit.is_some_and(|limit| iteration > limit) {
        return Ok(None);
    }
    let now = shared.now_ms();
    if repeat.end_date.is_some_and(|end| end > 0 && now > end) {
        return Ok(None);
    }
    let next_millis = match &repeat.pattern {
        None => None,
        Some(_) => {
            let Some(strategy) = &shared.repeat_strategy else {
                return Err(invalid(format!(
                    "scheduler {scheduler_id:?} has a cron pattern and this worker has no \
                     repeat strategy: build it with `repeat_strategy` (the scheduler feature \
                     provides the cron engine)"
                )));
            };
            let from = job.opts.prev_millis.unwrap_or(0).max(now);
            match strategy(from, repeat, &job.name) {
                Some(next) => Some(next.max(from)),
                // No next run: the schedule has ended.
                None => return Ok(None),
            }
        }
    };
    let args = NextIterationArgs {
        scheduler_id: scheduler_id.to_owned(),
        // `every`: computed by the store from the previous run.
        next_millis: next_millis.unwrap_or(0),
        template_data: job.data.clone(),
        delayed_job_opts: iteration_options(job, scheduler_id, repeat, iteration, next_millis, now),
        producer_id: Some(job.id.to_string()),
    };
    backend.update_job_scheduler_next_millis(&args).await
}

/// The next iteration's options as upstream's `getNextJobOpts` builds them from the current
/// job's: `timestamp` now, `repeatJobKey`, `repeat.count` advanced, `immediately` dropped,
/// `offset` kept only for a non-zero `every` offset, `prevMillis` only for patterns. `jobId`
/// and `delay` are what upstream sends for `every` too, and the store replaces them.
fn iteration_options(
    job: &Job,
    scheduler_id: &str,
    repeat: &RepeatOptions,
    iteration: u64,
    next_millis: Option<u64>,
    now: u64,
) -> crate::JobOptions {
    let mut opts = job.opts.clone().with_node_defaults();
    let mut next = repeat.clone();
    next.immediately = None;
    next.count = Some(iteration);
    if next.every.is_none() || next.offset.is_some_and(|o| o.is_zero()) {
        next.offset = None;
    }
    next.start_date = next.start_date.filter(|d| *d > 0);
    next.end_date = next.end_date.filter(|d| *d > 0);
    let offset = next
        .offset
        .map_or(0, |o| u64::try_from(o.as_millis()).unwrap_or(u64::MAX));
    opts.repeat = Some(next);
    opts.timestamp = Some(now);
    opts.prev_millis = next_millis;
    let due = next_millis.unwrap_or(now).saturating_add(offset);
    opts.delay = Some(Duration::from_millis(due.saturating_sub(now)));
    opts.job_id = Some(JobId::from(format!(
        "repeat:{scheduler_id}:{}",
        next_millis.unwrap_or(now)
    )));
    opts.extra.insert(
        "repeatJobKey".to_owned(),
        serde_json::Value::String(scheduler_id.to_owned()),
    );
    opts
}

fn invalid(message: String) -> Error {
    ValidationError::single("repeat", "repeat", message).into()
}

/// Upstream's `hasLegacyRepeatableKeyShape`: `name:id:endDate:tz:<every or pattern>`, with an
/// empty or numeric `endDate` and a numeric suffix or one holding a space (a cron pattern).
fn is_legacy_repeat_key(key: &str) -> bool {
    let parts: Vec<&str> = key.splitn(5, ':').collect();
    let [_, _, end_date, _, suffix] = parts.as_slice() else {
        return false;
    };
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !end_date.is_empty() && !numeric(end_date) {
        return false;
    }
    !suffix.is_empty() && (suffix.contains(' ') || numeric(suffix))
}

#[cfg(test)]
mod tests {
    use super::is_legacy_repeat_key;

    #[test]
    fn legacy_keys_are_told_from_scheduler_ids() {
        assert!(is_legacy_repeat_key("name:id::UTC:5000"));
        assert!(is_legacy_repeat_key("name:id:1700000000000::*/5 * * * *"));
        assert!(!is_legacy_repeat_key("sched-1"));
        assert!(!is_legacy_repeat_key("a:b:c:d"));
        assert!(!is_legacy_repeat_key("a:b:notdigits:tz:5000"));
        assert!(!is_legacy_repeat_key("a:b:c:d:"));
        assert!(!is_legacy_repeat_key("a:b::tz:every-5s"));
    }
}
