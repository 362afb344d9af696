//! [`WorkerOptions`]: Node.js BullMQ's `WorkerOptions`, typed, with its defaults.

use std::time::Duration;

use crate::backend::{RateLimiter, WorkerSettings};
use crate::options::{KeepJobs, Problem, ValidationError};

/// How a worker processes its queue; every field has Node.js BullMQ 6.7's default.
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::worker::WorkerOptions;
///
/// let opts = WorkerOptions::new().concurrency(8).lock_duration(Duration::from_secs(10));
/// assert_eq!(opts.lock_renew_time(), Duration::from_secs(5)); // half the lock, as upstream
/// opts.validate()?;
///
/// let err = WorkerOptions::new().concurrency(0).validate().unwrap_err();
/// assert_eq!(err.to_string(), "invalid worker options: concurrency: must be at least 1 (got 0)");
/// # Ok::<(), bullmq_core::options::ValidationError>(())
/// ```
#[derive(Debug, Clone, PartialEq, garde::Validate)]
pub struct WorkerOptions {
    /// Jobs processed at once (`concurrency`, 1).
    #[garde(custom(at_least_one))]
    pub concurrency: usize,
    /// Start processing on construction (`autorun`, true); otherwise call `run`.
    #[garde(skip)]
    pub autorun: bool,
    /// The worker's name (`name`): stored as `processedBy` and in the client name.
    #[garde(skip)]
    pub name: Option<String>,
    /// How long a job's lock lasts unless renewed (`lockDuration`, 30 s).
    #[garde(custom(positive))]
    pub lock_duration: Duration,
    /// How often locks are renewed (`lockRenewTime`, half the lock duration when unset).
    #[garde(skip)]
    pub lock_renew_time: Option<Duration>,
    /// How often the stalled-jobs check runs (`stalledInterval`, 30 s).
    #[garde(custom(positive))]
    pub stalled_interval: Duration,
    /// How many times a job may stall before it fails (`maxStalledCount`, 1).
    #[garde(skip)]
    pub max_stalled_count: u32,
    /// Do not run the stalled-jobs check (`skipStalledCheck`).
    #[garde(skip)]
    pub skip_stalled_check: bool,
    /// Do not renew locks (`skipLockRenewal`).
    #[garde(skip)]
    pub skip_lock_renewal: bool,
    /// Fail a job started more often than this (`maxStartedAttempts`).
    #[garde(skip)]
    pub max_started_attempts: Option<u32>,
    /// How long an idle worker blocks waiting for a job (`drainDelay`, 5 s).
    #[garde(custom(positive))]
    pub drain_delay: Duration,
    /// Retention of completed jobs that set none (`removeOnComplete`).
    #[garde(skip)]
    pub remove_on_complete: Option<KeepJobs>,
    /// Retention of failed jobs that set none (`removeOnFail`).
    #[garde(skip)]
    pub remove_on_fail: Option<KeepJobs>,
    /// The queue-wide rate limit this worker applies (`limiter`).
    #[garde(custom(limiter_is_usable))]
    pub limiter: Option<RateLimiter>,
    /// The longest wait while rate limited, so delayed jobs still get promoted
    /// (`maximumRateLimitDelay`, 30 s).
    #[garde(skip)]
    pub maximum_rate_limit_delay: Duration,
    /// Keep this many per-minute data points of metrics (`metrics.maxDataPoints`).
    #[garde(skip)]
    pub metrics_max_data_points: Option<u32>,
    /// Pause after a connection error before trying again (`runRetryDelay`, 15 s).
    #[garde(skip)]
    pub run_retry_delay: Duration,
    /// How long a worker that is dropped without being closed, or closed by a
    /// [`Shutdown`](crate::Shutdown) or a [`WorkerPool`](crate::WorkerPool), lets its jobs in
    /// progress finish before it cancels them and leaves them to the stalled check (30 s; ours,
    /// Node has no drop). Match Kubernetes' `terminationGracePeriodSeconds` to it.
    #[garde(custom(positive))]
    pub close_timeout: Duration,
}

// garde hands custom validators a reference to the field's type.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn at_least_one(n: &usize, _ctx: &()) -> garde::Result {
    if *n == 0 {
        return Err(garde::Error::new(format!("must be at least 1 (got {n})")));
    }
    Ok(())
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn positive(d: &Duration, _ctx: &()) -> garde::Result {
    if d.is_zero() {
        return Err(garde::Error::new("must be greater than 0"));
    }
    Ok(())
}

#[allow(clippy::ref_option)]
fn limiter_is_usable(l: &Option<RateLimiter>, _ctx: &()) -> garde::Result {
    match l {
        Some(l) if l.max == 0 => Err(garde::Error::new("max must be at least 1")),
        Some(l) if l.duration.is_zero() => {
            Err(garde::Error::new("duration must be greater than 0"))
        }
        _ => Ok(()),
    }
}

impl Default for WorkerOptions {
    fn default() -> Self {
        Self {
            concurrency: 1,
            autorun: true,
            name: None,
            lock_duration: Duration::from_secs(30),
            lock_renew_time: None,
            stalled_interval: Duration::from_secs(30),
            max_stalled_count: 1,
            skip_stalled_check: false,
            skip_lock_renewal: false,
            max_started_attempts: None,
            drain_delay: Duration::from_secs(5),
            remove_on_complete: None,
            remove_on_fail: None,
            limiter: None,
            maximum_rate_limit_delay: Duration::from_secs(30),
            metrics_max_data_points: None,
            run_retry_delay: Duration::from_secs(15),
            close_timeout: Duration::from_secs(30),
        }
    }
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident: $ty:ty) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, value: $ty) -> Self {
            self.$name = value;
            self
        }
    };
}

macro_rules! option_setter {
    ($(#[$doc:meta])* $name:ident: $ty:ty) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, value: $ty) -> Self {
            self.$name = Some(value);
            self
        }
    };
}

impl WorkerOptions {
    /// Node.js BullMQ's defaults.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    setter!(/// Sets `concurrency`.
        concurrency: usize);
    setter!(/// Sets `autorun`.
        autorun: bool);
    /// Sets the worker's `name`.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    setter!(/// Sets `lockDuration`.
        lock_duration: Duration);
    setter!(/// Sets `stalledInterval`.
        stalled_interval: Duration);
    setter!(/// Sets `maxStalledCount`.
        max_stalled_count: u32);
    setter!(/// Sets `skipStalledCheck`.
        skip_stalled_check: bool);
    setter!(/// Sets `skipLockRenewal`.
        skip_lock_renewal: bool);
    option_setter!(/// Sets `maxStartedAttempts`.
        max_started_attempts: u32);
    setter!(/// Sets `drainDelay`.
        drain_delay: Duration);
    option_setter!(/// Sets the worker's `removeOnComplete`.
        remove_on_complete: KeepJobs);
    option_setter!(/// Sets the worker's `removeOnFail`.
        remove_on_fail: KeepJobs);
    option_setter!(/// Sets `limiter`.
        limiter: RateLimiter);
    setter!(/// Sets `maximumRateLimitDelay`.
        maximum_rate_limit_delay: Duration);
    option_setter!(/// Sets `metrics.maxDataPoints`.
        metrics_max_data_points: u32);
    setter!(/// Sets `runRetryDelay`.
        run_retry_delay: Duration);
    setter!(/// Sets how long a dropped or shut down worker lets its jobs finish.
        close_timeout: Duration);

    /// Sets `lockRenewTime`.
    #[must_use]
    pub fn lock_renew_time_of(mut self, every: Duration) -> Self {
        self.lock_renew_time = Some(every);
        self
    }

    /// How often locks are renewed: `lockRenewTime`, else half the lock duration.
    #[must_use]
    pub fn lock_renew_time(&self) -> Duration {
        self.lock_renew_time.unwrap_or(self.lock_duration / 2)
    }

    /// Checks every rule; the worker calls it when built.
    ///
    /// # Errors
    ///
    /// A [`ValidationError`] naming each offending field.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut extra = Vec::new();
        if self.lock_renew_time.is_some_and(|t| t.is_zero()) {
            extra.push(Problem::new("lockRenewTime", "must be greater than 0"));
        }
        ValidationError::check("worker options", garde::Validate::validate(self), extra)
    }

    /// What the finishing moves send as the worker's settings.
    pub(crate) fn settings(&self) -> WorkerSettings {
        WorkerSettings {
            name: self.name.clone(),
            lock_duration: Some(self.lock_duration),
            limiter: self.limiter,
            max_metrics_size: self.metrics_max_data_points,
            remove_on_complete: self.remove_on_complete.clone(),
            remove_on_fail: self.remove_on_fail.clone(),
        }
    }
}
