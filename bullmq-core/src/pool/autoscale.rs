//! The pool's own autoscaler: reads the queue's [scaling signals](crate::Queue::scaling_signals)
//! on an interval and scales the pool between `min` and `max` workers, up at once, down only
//! after a cool-down, so that a burst does not make it flap.

use std::sync::Weak;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::PoolInner;
use crate::backend::{Backend, ScalingSignals};
use crate::options::{Problem, ValidationError};
use crate::worker::Processor;

/// How a [`WorkerPool`](super::WorkerPool) sizes itself.
///
/// The wanted size is `ceil((backlog + active) / jobs_per_worker)`, the jobs ready or in
/// progress per worker (in-flight jobs count, so that a pool that keeps up does not shrink
/// until the backlog grows again); with [`max_wait`](Self::max_wait), a backlog whose
/// oldest job waited longer than that asks for one worker more than now. The result is kept
/// within `min..=max`. Growing happens at the next read; shrinking only once `cooldown` has
/// passed since the last change.
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::pool::Autoscale;
///
/// let policy = Autoscale::new(1, 10)
///     .jobs_per_worker(200)
///     .max_wait(Duration::from_secs(30))
///     .cooldown(Duration::from_secs(60));
/// policy.validate()?;
/// # Ok::<(), bullmq_core::options::ValidationError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Autoscale {
    /// The fewest workers (at least 1: a pool at 0 could not see its queue fill).
    pub min: usize,
    /// The most workers.
    pub max: usize,
    /// Jobs ready or in progress one worker should carry (100 by default; size it as the
    /// workers' concurrency times the queue depth per slot you accept).
    pub jobs_per_worker: u64,
    /// The longest the oldest ready job should wait; past it, one more worker.
    pub max_wait: Option<Duration>,
    /// How often the signals are read (5 s by default).
    pub interval: Duration,
    /// How long after a change the pool may shrink (60 s by default).
    pub cooldown: Duration,
}

impl Autoscale {
    /// Between `min` and `max` workers, with the defaults for the rest.
    #[must_use]
    pub fn new(min: usize, max: usize) -> Self {
        Self {
            min,
            max,
            jobs_per_worker: 100,
            max_wait: None,
            interval: Duration::from_secs(5),
            cooldown: Duration::from_secs(60),
        }
    }

    /// Sets [`jobs_per_worker`](Self::jobs_per_worker).
    #[must_use]
    pub fn jobs_per_worker(mut self, jobs: u64) -> Self {
        self.jobs_per_worker = jobs;
        self
    }

    /// Sets [`max_wait`](Self::max_wait).
    #[must_use]
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = Some(wait);
        self
    }

    /// Sets [`interval`](Self::interval).
    #[must_use]
    pub fn interval(mut self, every: Duration) -> Self {
        self.interval = every;
        self
    }

    /// Sets [`cooldown`](Self::cooldown).
    #[must_use]
    pub fn cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// Checks the policy.
    ///
    /// # Errors
    ///
    /// A [`ValidationError`] naming each bad field.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut problems = Vec::new();
        let mut problem = |path: &str, message: String| problems.push(Problem::new(path, message));
        if self.min == 0 {
            problem(
                "min",
                "must be at least 1 (got 0): an empty pool would not see its queue fill".to_owned(),
            );
        }
        if self.max < self.min {
            problem(
                "max",
                format!("must be at least min ({} < {})", self.max, self.min),
            );
        }
        if self.max > super::MAX_POOL_SIZE {
            problem(
                "max",
                format!(
                    "must be at most {} (got {})",
                    super::MAX_POOL_SIZE,
                    self.max
                ),
            );
        }
        if self.jobs_per_worker == 0 {
            problem("jobs_per_worker", "must be at least 1 (got 0)".to_owned());
        }
        if self.interval < Duration::from_millis(1) {
            problem(
                "interval",
                format!("must be at least 1 ms (got {:?})", self.interval),
            );
        }
        ValidationError::check("autoscale policy", Ok(()), problems)
    }

    /// The size wanted for a pool of `current` workers seeing `signals`, before the cool-down.
    #[must_use]
    pub fn wanted(&self, current: usize, signals: &ScalingSignals) -> usize {
        let load = signals.backlog.saturating_add(signals.active);
        let by_load = usize::try_from(load.div_ceil(self.jobs_per_worker)).unwrap_or(usize::MAX);
        let by_wait = match (self.max_wait, signals.oldest_waiting_age) {
            (Some(max), Some(age)) if age > max && signals.backlog > 0 => current.saturating_add(1),
            _ => 0,
        };
        by_load.max(by_wait).clamp(self.min, self.max)
    }

    /// The size to scale to now, given when the pool last changed size: up at once, down
    /// once the cool-down has passed; `None` to leave it.
    pub(crate) fn decide(
        &self,
        current: usize,
        signals: &ScalingSignals,
        last_change: Option<Instant>,
        now: Instant,
    ) -> Option<usize> {
        let wanted = self.wanted(current, signals);
        let cooled = last_change.is_none_or(|t| now.duration_since(t) >= self.cooldown);
        match wanted.cmp(&current) {
            std::cmp::Ordering::Greater => Some(wanted),
            std::cmp::Ordering::Less if cooled => Some(wanted),
            _ => None,
        }
    }
}

/// The task [`WorkerPool::autoscale`](super::WorkerPool::autoscale) started; dropping it stops
/// the autoscaling (the pool keeps its size).
#[derive(Debug)]
#[must_use = "dropping the autoscaler stops it"]
pub struct Autoscaler {
    task: JoinHandle<()>,
}

impl Drop for Autoscaler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Autoscaler {
    pub(crate) fn start<B: Backend, P: Processor<B>>(
        pool: Weak<PoolInner<B, P>>,
        policy: Autoscale,
        runtime: &tokio::runtime::Handle,
    ) -> Self {
        let task = runtime.spawn(async move {
            let mut last_change = None;
            let mut ticks = tokio::time::interval(policy.interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                // The pool is gone (dropped): nothing to scale.
                let Some(pool) = pool.upgrade() else { return };
                if pool.is_closing() {
                    return;
                }
                let signals = match pool.queue.scaling_signals().await {
                    Ok(signals) => signals,
                    Err(err) => {
                        tracing::warn!(target: "bullmq", queue = %pool.queue.name(), error = %err, "autoscale: could not read the scaling signals");
                        continue;
                    }
                };
                let current = pool.current_size();
                let now = Instant::now();
                if let Some(to) = policy.decide(current, &signals, last_change, now) {
                    tracing::info!(
                        target: "bullmq",
                        queue = %pool.queue.name(),
                        from = current,
                        to,
                        backlog = signals.backlog,
                        active = signals.active,
                        "autoscale"
                    );
                    match PoolInner::scale(&pool, to).await {
                        Ok(()) => last_change = Some(now),
                        Err(err) => {
                            tracing::warn!(target: "bullmq", error = %err, "autoscale: could not scale");
                        }
                    }
                }
            }
        });
        Self { task }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::ScalingObservation;

    fn signals(backlog: u64, active: u64, age_ms: Option<u64>) -> ScalingSignals {
        ScalingSignals::from_observation(ScalingObservation {
            waiting: backlog,
            active,
            oldest_ready_timestamp: age_ms.map(|age| 100_000 - age),
            now_ms: 100_000,
            ..ScalingObservation::default()
        })
    }

    #[test]
    fn the_wanted_size_follows_the_load_within_bounds() {
        let policy = Autoscale::new(1, 10).jobs_per_worker(100);
        assert_eq!(policy.wanted(3, &signals(0, 0, None)), 1, "idle: min");
        assert_eq!(policy.wanted(3, &signals(250, 50, Some(10))), 3);
        assert_eq!(
            policy.wanted(3, &signals(5_000, 0, Some(10))),
            10,
            "capped at max"
        );
        let waiting = policy.max_wait(Duration::from_secs(1));
        assert_eq!(
            waiting.wanted(2, &signals(10, 0, Some(5_000))),
            3,
            "one more when jobs wait too long"
        );
        assert_eq!(waiting.wanted(2, &signals(10, 0, Some(500))), 1);
    }

    #[test]
    fn up_at_once_down_after_the_cooldown() {
        let policy = Autoscale::new(1, 10)
            .jobs_per_worker(10)
            .cooldown(Duration::from_secs(60));
        let t0 = Instant::now();
        let busy = signals(100, 0, Some(1));
        assert_eq!(policy.decide(1, &busy, None, t0), Some(10));
        assert_eq!(
            policy.decide(1, &busy, Some(t0), t0),
            Some(10),
            "growing ignores the cool-down"
        );
        let idle = signals(0, 0, None);
        let soon = t0 + Duration::from_secs(30);
        assert_eq!(
            policy.decide(10, &idle, Some(t0), soon),
            None,
            "too soon to shrink"
        );
        let later = t0 + Duration::from_secs(60);
        assert_eq!(policy.decide(10, &idle, Some(t0), later), Some(1));
        assert_eq!(
            policy.decide(1, &idle, Some(t0), later),
            None,
            "already at min"
        );
    }

    #[test]
    fn bad_policies_are_refused_naming_the_field() {
        let err = Autoscale::new(0, 0)
            .jobs_per_worker(0)
            .validate()
            .expect_err("a bad policy");
        let paths: Vec<_> = err.problems().iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["min", "jobs_per_worker"]);
        let err = Autoscale::new(5, 2).validate().expect_err("a bad policy");
        assert!(
            err.to_string().contains("max: must be at least min"),
            "{err}"
        );
    }
}
