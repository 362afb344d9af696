//! Whether a failed attempt is retried, and after how long: upstream's
//! `Job#shouldRetryJob`, with the settings of the worker moving the job.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::Job;
use crate::options::{BackoffStrategy, ValidationError};
use crate::telemetry::spans::Settle;

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

impl RetryDecision {
    /// The move's span, named as Node's `Job#moveToFailed` names it (`delay`, `retry`, `fail`).
    pub(crate) fn settle(self) -> Settle {
        match self {
            Self::After(_) => Settle::Delay,
            Self::Now => Settle::Retry,
            Self::Fail => Settle::Fail,
        }
    }
}

/// What a worker adds to the rule (upstream reads both from the options of the queue the job
/// came through, which for a job taken by a worker are the worker's): its
/// `maxStartedAttempts` and its custom backoff strategies. A queue's own handle has neither.
#[derive(Default)]
pub(crate) struct RetryRules {
    /// Fail without retry a job started this many times (`maxStartedAttempts`).
    pub(crate) max_started_attempts: Option<u32>,
    /// The custom strategies, by the `backoff.type` jobs name them with.
    pub(crate) backoffs: HashMap<String, BackoffFn>,
}

/// Why no decision could be made: the job names a strategy nobody registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownStrategy(pub(crate) String);

impl UnknownStrategy {
    /// The refusal, naming the strategy and where it must be registered; `outcome` says what
    /// became of the job.
    pub(crate) fn refusal(&self, outcome: &str) -> ValidationError {
        ValidationError::single(
            "backoff",
            "backoff.type",
            format!(
                "unknown backoff strategy {:?}: register it on the worker that runs the \
                 job (`WorkerBuilder::backoff_strategy`; by hand, move the job through \
                 `Worker::job`, since a queue's own handle knows no strategy); {outcome}",
                self.0
            ),
        )
    }
}

/// Upstream's rule: retry while `attemptsMade + 1 < attempts`, unless the failure is
/// unrecoverable or the job was started `max_started_attempts` times; the delay comes from
/// the job's backoff (none: at once), a custom strategy from `rules`.
pub(crate) fn decide(
    job: &Job,
    message: &str,
    unrecoverable: bool,
    rules: &RetryRules,
) -> Result<RetryDecision, UnknownStrategy> {
    let attempts = max_attempts(job);
    let started_out = rules
        .max_started_attempts
        .is_some_and(|m| m > 0 && m <= job.attempts_started);
    let next_attempt = job.attempts_made.saturating_add(1);
    if unrecoverable || started_out || next_attempt >= attempts {
        return Ok(RetryDecision::Fail);
    }
    let Some(backoff) = &job.opts.backoff else {
        return Ok(RetryDecision::Now);
    };
    let delay = match &backoff.strategy {
        BackoffStrategy::Custom(name) => {
            let strategy = rules
                .backoffs
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

    fn started_at_most(max: u32) -> RetryRules {
        RetryRules {
            max_started_attempts: Some(max),
            ..RetryRules::default()
        }
    }

    #[test]
    fn retries_while_attempts_remain() {
        let none = RetryRules::default();
        let opts = JobOptions::new()
            .attempts(3)
            .backoff(Backoff::exponential(Duration::from_millis(100)));
        let after = |made| decide(&job(opts.clone(), made), "x", false, &none);
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
        assert_eq!(decide(&plain, "x", false, &none), Ok(RetryDecision::Now));
        assert_eq!(decide(&plain, "x", true, &none), Ok(RetryDecision::Fail));
        assert_eq!(
            decide(&plain, "x", false, &started_at_most(1)),
            Ok(RetryDecision::Fail)
        );
    }

    #[test]
    fn custom_strategies_are_found_by_name() {
        let mut custom = RetryRules::default();
        custom.backoffs.insert(
            "linear".to_owned(),
            Arc::new(|n, _job: &Job, _msg: &str| {
                (n < 2).then(|| Duration::from_millis(u64::from(n) * 10))
            }),
        );
        let opts = JobOptions::new()
            .attempts(5)
            .backoff(Backoff::custom("linear"));
        assert_eq!(
            decide(&job(opts.clone(), 0), "x", false, &custom),
            Ok(RetryDecision::After(Duration::from_millis(10)))
        );
        assert_eq!(
            decide(&job(opts.clone(), 1), "x", false, &custom),
            Ok(RetryDecision::Fail)
        );
        let unknown = JobOptions::new()
            .attempts(5)
            .backoff(Backoff::custom("nope"));
        assert_eq!(
            decide(&job(unknown, 0), "x", false, &custom),
            Err(UnknownStrategy("nope".to_owned()))
        );
    }

    #[test]
    fn an_attempts_count_past_u32_still_retries() {
        // Node.js compares the stored number as it is: `1e10` attempts leave attempts to go.
        let mut opts = JobOptions::new();
        opts.extra
            .insert("attempts".to_owned(), serde_json::json!(1e10));
        assert_eq!(
            decide(&job(opts, 7), "x", false, &RetryRules::default()),
            Ok(RetryDecision::Now)
        );
        let mut unreadable = JobOptions::new();
        unreadable
            .extra
            .insert("attempts".to_owned(), serde_json::json!("three"));
        assert_eq!(
            decide(&job(unreadable, 0), "x", false, &RetryRules::default()),
            Ok(RetryDecision::Fail)
        );
    }
}
