//! Advancing a job scheduler when one of its jobs is taken (upstream:
//! `Worker#nextJobFromJobData` calling `JobScheduler#upsertJobScheduler` with
//! `override: false`): the next iteration is added, once, by the job that is about to run.
//!
//! For `every` schedules the store computes the next run (`updateJobScheduler`), so nothing
//! but the iteration's options is needed here. Cron `pattern` schedules get their next run from
//! [`next_cron_millis`] (Node's default, cron-parser's semantics) unless the worker was built
//! with a [`RepeatStrategy`] (upstream: `settings.repeatStrategy`) through
//! [`WorkerBuilder::repeat_strategy`](crate::worker::WorkerBuilder::repeat_strategy). The
//! iteration itself is planned by [`plan_iteration_with`], as a producer's upsert plans it.

use std::sync::Arc;

use tracing::Span;

use super::{RepeatOptions, next_cron_millis, plan_iteration_with};
use crate::backend::{NextIterationArgs, Schedulers};
use crate::options::ValidationError;
use crate::telemetry::context;
use crate::{Error, Job, JobId, Result};

/// Gives the next run (Unix ms) of a `pattern` schedule after `millis`, or `None` when there
/// is none (upstream: `RepeatStrategy(millis, opts, name)`).
pub type RepeatStrategy = Arc<dyn Fn(u64, &RepeatOptions, &str) -> Option<u64> + Send + Sync>;

/// Adds the iteration of scheduler `scheduler_id` that follows `job`, one of its jobs about to
/// run, as Node's worker does when it takes such a job: `Ok(None)` when the schedule is over
/// or another producer already added that iteration. `strategy` overrides how a cron
/// `pattern`'s next run is found (upstream: `settings.repeatStrategy`).
///
/// The iteration carries the trace context `job` carries (`tm`), or, when it carries none and
/// does not omit it, the context of the current span (the worker's `add` span), as Node's
/// worker passes the job's telemetry on.
///
/// # Errors
///
/// [`Error::Invalid`] for a schedule Node refuses to advance (legacy repeat key, no or both of
/// `pattern` and `every`, an invalid pattern); a backend failure.
pub async fn advance_job_scheduler<B: Schedulers>(
    backend: &B,
    job: &Job,
    scheduler_id: &str,
    now: u64,
    strategy: Option<&RepeatStrategy>,
) -> Result<Option<JobId>> {
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
    let next_run = |from: u64| match strategy {
        Some(strategy) => Ok(strategy(from, repeat, &job.name)),
        None => next_cron_millis(repeat, from, now),
    };
    let mut job_opts = job.opts.clone().with_node_defaults();
    context::apply_to_child(&Span::current(), &mut job_opts);
    let plan = plan_iteration_with(scheduler_id, repeat, &job_opts, now, next_run)
        .map_err(|e| invalid(e.to_string()))?;
    let Some(plan) = plan else {
        // The schedule has ended.
        return Ok(None);
    };
    let args = NextIterationArgs {
        scheduler_id: scheduler_id.to_owned(),
        // `every`: computed by the store from the previous run.
        next_millis: plan.next_millis.unwrap_or(0),
        template_data: job.data.clone(),
        delayed_job_opts: plan.delayed_job_opts,
        producer_id: Some(job.id.to_string()),
    };
    backend.update_job_scheduler_next_millis(&args).await
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
