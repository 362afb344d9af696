//! Retry backoff: how long a failed job waits before its next attempt.

use std::time::Duration;

/// Which formula turns the attempt number into a delay.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BackoffStrategy {
    /// The same delay every time (`"fixed"`).
    Fixed,
    /// `delay * 2^(attemptsMade - 1)` (`"exponential"`).
    Exponential,
    /// A strategy registered by name on the worker (any other `type`).
    Custom(String),
}

impl BackoffStrategy {
    /// The `type` string stored in the job options.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Fixed => "fixed",
            Self::Exponential => "exponential",
            Self::Custom(name) => name,
        }
    }

    /// Parses a stored `type` string.
    #[must_use]
    pub fn from_type(kind: &str) -> Self {
        match kind {
            "fixed" => Self::Fixed,
            "exponential" => Self::Exponential,
            other => Self::Custom(other.to_owned()),
        }
    }
}

/// Backoff settings, stored as `{type, delay?, jitter?}`.
///
/// Node.js also accepts a bare number of milliseconds and stores it as
/// `{type: "fixed", delay: n}`; [`Backoff::fixed`] is that form.
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::options::Backoff;
///
/// let b = Backoff::exponential(Duration::from_secs(1)).jitter(0.5);
/// assert_eq!(b.delay_for_attempt(3, 0.0), Some(Duration::from_millis(2000)));
/// ```
#[derive(Debug, Clone, PartialEq, garde::Validate)]
pub struct Backoff {
    /// The formula.
    #[garde(skip)]
    pub strategy: BackoffStrategy,
    /// Base delay (`delay`).
    #[garde(skip)]
    pub delay: Option<Duration>,
    /// Share of the delay that is randomized, 0 to 1 (`jitter`).
    #[garde(custom(jitter_in_range))]
    pub jitter: Option<f64>,
}

// garde hands custom validators a reference to the field's type.
#[allow(clippy::ref_option)]
fn jitter_in_range(jitter: &Option<f64>, _ctx: &()) -> garde::Result {
    match jitter {
        Some(j) if !(0.0..=1.0).contains(j) => Err(garde::Error::new(format!(
            "must be between 0 and 1 (got {j})"
        ))),
        _ => Ok(()),
    }
}

impl Backoff {
    /// `{type: "fixed", delay}`: what Node stores for `backoff: <number>`.
    #[must_use]
    pub fn fixed(delay: Duration) -> Self {
        Self {
            strategy: BackoffStrategy::Fixed,
            delay: Some(delay),
            jitter: None,
        }
    }

    /// `{type: "exponential", delay}`.
    #[must_use]
    pub fn exponential(delay: Duration) -> Self {
        Self {
            strategy: BackoffStrategy::Exponential,
            delay: Some(delay),
            jitter: None,
        }
    }

    /// A custom strategy registered on the worker under `name`.
    #[must_use]
    pub fn custom(name: impl Into<String>) -> Self {
        Self {
            strategy: BackoffStrategy::Custom(name.into()),
            delay: None,
            jitter: None,
        }
    }

    /// Sets the base delay.
    #[must_use]
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Sets the jitter (0 to 1).
    #[must_use]
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// The delay before the next attempt after `attempts_made` failures, as upstream's built-in
    /// strategies compute it in JavaScript numbers (milliseconds as doubles, `Math.round` and
    /// `Math.floor` included), with `random` in `[0, 1)` standing in for `Math.random()`.
    /// `None` for custom strategies, which the worker resolves. Saturates at `Duration::MAX`.
    #[must_use]
    pub fn delay_for_attempt(&self, attempts_made: u32, random: f64) -> Option<Duration> {
        let base = self.delay.map_or(0.0, millis_f64);
        let jitter = self.jitter.unwrap_or(0.0);
        let max_ms = match self.strategy {
            BackoffStrategy::Fixed => base,
            BackoffStrategy::Exponential => {
                let exp = i32::try_from(attempts_made)
                    .unwrap_or(i32::MAX)
                    .saturating_sub(1);
                js_round(2f64.powi(exp) * base)
            }
            BackoffStrategy::Custom(_) => return None,
        };
        let ms = if jitter > 0.0 {
            let min = max_ms * (1.0 - jitter);
            (random * max_ms * jitter + min).floor()
        } else {
            max_ms
        };
        Some(duration_from_millis_f64(ms))
    }
}

/// A duration as JavaScript's number of milliseconds, exact for whole milliseconds.
#[allow(clippy::cast_precision_loss)]
fn millis_f64(d: Duration) -> f64 {
    d.as_millis() as f64 + f64::from(d.subsec_nanos() % 1_000_000) / 1e6
}

/// `Math.round`: halves go up, also for negative numbers.
fn js_round(x: f64) -> f64 {
    (x + 0.5).floor()
}

/// Milliseconds back to a duration: exact when whole, saturating when huge, zero when negative.
fn duration_from_millis_f64(ms: f64) -> Duration {
    if ms.is_nan() || ms <= 0.0 {
        return Duration::ZERO;
    }
    if ms.fract() == 0.0 && ms < 18_446_744_073_709_551_616.0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        return Duration::from_millis(ms as u64);
    }
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX)
}
