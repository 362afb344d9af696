//! Whether a failed attempt is retried, and after how long: upstream's
//! `Job#shouldRetryJob` with the worker's custom backoff strategies.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::Job;
use crate::options::BackoffStrategy;

/// A custom backoff strategy, registered on the worker under the `type` name jobs use
/// (upstream: `settings.backoffStrategy`). Given the attempts made so far (this one included),
/// the job and the failure message, it returns the delay before the next attempt, or `None`
/// to fail the job for good (upstream: returning `-1`).
pub type BackoffFn = Arc<dyn Fn(u32, &Job, &str) -> Option<Duration> + Send + Sync>;

/// What to do with a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RetryDecision {
    /// Fail for good.
    Fail,
    /// Back to wait at once.
    Now,
    /// To delayed for this long.
    After(Duration),
}

/// Why no decision could be made: the job names a strategy nobody registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownStrategy(pub(crate) String);

/// Upstream's rule: retry while `attemptsMade + 1 < attempts`, unless the failure is
/// unrecoverable or the job was started `max_started_attempts` times; the delay comes from
/// the job's backoff (none: at once).
pub(crate) fn decide(
    job: &Job,
    message: &str,
    unrecoverable: bool,
    max_started_attempts: Option<u32>,
    custom: &HashMap<String, BackoffFn>,
) -> Result<RetryDecision, UnknownStrategy> {
    let attempts = max_attempts(job);
    let started_out = max_started_attempts.is_some_and(|m| m > 0 && m <= job.attempts_started);
    let next_attempt = job.attempts_made.saturating_add(1);
    if unrecoverable || started_out || next_attempt >= attempts {
        return Ok(RetryDecision::Fail);
    }
    let Some(backoff) = &job.opts.backoff else {
        return Ok(RetryDecision::Now);
    };
    let delay = match &backoff.strategy {
        BackoffStrategy::Custom(name) => {
            let strategy = custom
                .get(name)
                .ok_or_else(|| UnknownStrategy(name.clone()))?;
            match strategy(next_attempt, job, message) {
                Some(delay) => delay,
                None => return Ok(RetryDecision::Fail),
            }
        }
        _ => backoff
            .delay_for_attempt(next_attempt, fastrand::f64())
            .unwrap_or_default(),
    };
    Ok(if delay.is_zero() {
        RetryDecision::Now
    } else {
        RetryDecision::After(delay)
    })
}

/// The job's `attempts`. Node.js compares whatever number is stored, so a count past `u32`
/// (kept raw in the options' `extra`, as an invalid option) still means "retry": it is read
/// as `u32::MAX`, which no attempt count reaches. Anything else unreadable means 0.
fn max_attempts(job: &Job) -> u32 {
    if let Some(attempts) = job.opts.attempts {
        return attempts;
    }
    job.opts
        .extra
        .get("attempts")
        .and_then(serde_json::Value::as_f64)
        .map_or(0, |n| if n > f64::from(u32::MAX) { u32::MAX } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JobOptions;
    use crate::options::Backoff;

    fn job(opts: JobOptions, made: u32) -> Job {
        let mut job = Job::new("j", "{}".to_owned(), opts, 0);
        job.attempts_made = made;
        job.attempts_started = made + 1;
        job
    }

    #[test]
    fn retries_while_attempts_remain() {
        let none = HashMap::new();
        let opts = JobOptions::new()
            .attempts(3)
            .backoff(Backoff::exponential(Duration::from_millis(100)));
        let after = |made| decide(&job(opts.clone(), made), "x", false, None, &none);
        assert_eq!(
            after(0),
            Ok(RetryDecision::After(Duration::from_millis(100)))
        );
        assert_eq!(
            after(1),
            Ok(RetryDecision::After(Duration::from_millis(200)))
        );
        assert_eq!(after(2), Ok(RetryDecision::Fail));
        let plain = job(JobOptions::new().attempts(2), 0);
        assert_eq!(
            decide(&plain, "x", false, None, &none),
            Ok(RetryDecision::Now)
        );
        assert_eq!(
            decide(&plain, "x", true, None, &none),
            Ok(RetryDecision::Fail)
        );
        assert_eq!(
            decide(&plain, "x", false, Some(1), &none),
            Ok(RetryDecision::Fail)
        );
    }

    #[test]
    fn custom_strategies_are_found_by_name() {
        let mut custom: HashMap<String, BackoffFn> = HashMap::new();
        custom.insert(
            "linear".to_owned(),
            Arc::new(|n, _job: &Job, _msg: &str| {
                (n < 2).then(|| Duration::from_millis(u64::from(n) * 10))
            }),
        );
        let opts = JobOptions::new()
            .attempts(5)
            .backoff(Backoff::custom("linear"));
        assert_eq!(
            decide(&job(opts.clone(), 0), "x", false, None, &custom),
            Ok(RetryDecision::After(Duration::from_millis(10)))
        );
        assert_eq!(
            decide(&job(opts.clone(), 1), "x", false, None, &custom),
            Ok(RetryDecision::Fail)
        );
        let unknown = JobOptions::new()
            .attempts(5)
            .backoff(Backoff::custom("nope"));
        assert_eq!(
            decide(&job(unknown, 0), "x", false, None, &custom),
            Err(UnknownStrategy("nope".to_owned()))
        );
    }
}
