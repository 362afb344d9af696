//! How a [`WorkerPool`](super::WorkerPool) restarts a worker that stopped on its own, as an
//! OTP supervisor does: with a back-off, and at most `max_restarts` within `within`, past which
//! the pool gives up on that worker and reports itself failed.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use crate::options::{Problem, ValidationError};

/// The restart policy of a pool's workers.
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::pool::Supervision;
///
/// // At most 5 restarts in a minute, waiting 0.5 s, 1 s, 2 s … up to 10 s between them; a
/// // worker whose connections keep failing for a minute is restarted too.
/// let policy = Supervision::new(5, Duration::from_secs(60))
///     .backoff(Duration::from_millis(500), Duration::from_secs(10));
/// assert_eq!(policy, Supervision::default());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Supervision {
    /// Restarts allowed within [`within`](Self::within) (OTP's intensity).
    pub max_restarts: u32,
    /// The window the restarts are counted in (OTP's period).
    pub within: Duration,
    /// The first pause before a restart, doubled at each consecutive failure.
    pub min_backoff: Duration,
    /// The longest pause before a restart.
    pub max_backoff: Duration,
    /// A worker whose connections stay unhealthy this long (its waits or fetches failing,
    /// e.g. a server that refuses it) is restarted as if it had stopped, with fresh
    /// connections; `None` leaves it retrying on its own, as Node's worker does (60 s).
    pub unhealthy_after: Option<Duration>,
}

impl Default for Supervision {
    fn default() -> Self {
        Self {
            max_restarts: 5,
            within: Duration::from_secs(60),
            min_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            unhealthy_after: Some(Duration::from_secs(60)),
        }
    }
}

impl Supervision {
    /// At most `max_restarts` within `within`, with the default back-off (0.5 s doubling to 10 s).
    #[must_use]
    pub fn new(max_restarts: u32, within: Duration) -> Self {
        Self {
            max_restarts,
            within,
            ..Self::default()
        }
    }

    /// The pause before the first restart, doubled after each failure up to `max`.
    #[must_use]
    pub fn backoff(mut self, min: Duration, max: Duration) -> Self {
        self.min_backoff = min;
        self.max_backoff = max;
        self
    }

    /// Sets [`unhealthy_after`](Self::unhealthy_after).
    #[must_use]
    pub fn unhealthy_after(mut self, after: Option<Duration>) -> Self {
        self.unhealthy_after = after;
        self
    }

    /// Checks the policy.
    ///
    /// # Errors
    ///
    /// A [`ValidationError`] naming each bad field.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut problems = Vec::new();
        if self.within.is_zero() {
            problems.push(Problem::new(
                "within",
                "must be greater than 0: the window restarts are counted in",
            ));
        }
        if self.min_backoff > self.max_backoff {
            problems.push(Problem::new(
                "min_backoff",
                format!(
                    "must not exceed max_backoff ({:?} > {:?})",
                    self.min_backoff, self.max_backoff
                ),
            ));
        }
        if self.unhealthy_after.is_some_and(|d| d.is_zero()) {
            problems.push(Problem::new(
                "unhealthy_after",
                "must be greater than 0, or None to never restart an unhealthy worker",
            ));
        }
        ValidationError::check("pool supervision", Ok(()), problems)
    }

    /// The pause before the restart that follows `failures` consecutive failures (1 or more).
    pub(crate) fn delay(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(20);
        self.min_backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff)
    }
}

/// The restarts of one pool, to hold against its [`Supervision`].
#[derive(Debug, Default)]
pub(crate) struct RestartLog {
    at: VecDeque<Instant>,
}

impl RestartLog {
    /// Records a restart at `now`; false when it is one too many within the window.
    pub(crate) fn allow(&mut self, policy: &Supervision, now: Instant) -> bool {
        while self
            .at
            .front()
            .is_some_and(|t| now.duration_since(*t) >= policy.within)
        {
            self.at.pop_front();
        }
        if self.at.len() >= usize::try_from(policy.max_restarts).unwrap_or(usize::MAX) {
            return false;
        }
        self.at.push_back(now);
        true
    }

    /// Restarts within the window ending at `now`.
    pub(crate) fn recent(&self, policy: &Supervision, now: Instant) -> usize {
        self.at
            .iter()
            .filter(|t| now.duration_since(**t) < policy.within)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_bound() {
        let p = Supervision::default();
        let delays: Vec<_> = (1..=7).map(|n| p.delay(n).as_millis()).collect();
        assert_eq!(delays, [500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
        assert_eq!(p.delay(u32::MAX), Duration::from_secs(10));
    }

    #[test]
    fn restarts_past_the_limit_within_the_window_are_refused() {
        let policy = Supervision::new(2, Duration::from_secs(10));
        let mut log = RestartLog::default();
        let t0 = Instant::now();
        assert!(log.allow(&policy, t0));
        assert!(log.allow(&policy, t0 + Duration::from_secs(1)));
        assert!(!log.allow(&policy, t0 + Duration::from_secs(2)));
        assert_eq!(log.recent(&policy, t0 + Duration::from_secs(2)), 2);
        // The first restart leaves the window: one more is allowed.
        assert!(log.allow(&policy, t0 + Duration::from_secs(10)));
    }

    #[test]
    fn bad_policies_are_refused_naming_the_field() {
        let err = Supervision::new(1, Duration::ZERO)
            .validate()
            .expect_err("a bad policy");
        assert!(err.to_string().contains("within"), "{err}");
        let err = Supervision::default()
            .backoff(Duration::from_secs(5), Duration::from_secs(1))
            .validate()
            .expect_err("a bad policy");
        assert!(err.to_string().contains("min_backoff"), "{err}");
    }
}
