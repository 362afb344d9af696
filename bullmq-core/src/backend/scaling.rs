//! What an autoscaler scales on: the backlog, the jobs in progress and how long the oldest
//! ready job has waited ([`Queries::scaling_signals`](super::Queries::scaling_signals)).

use std::time::Duration;

/// How many jobs at the front of each ready structure (the wait list and the prioritized set)
/// [`Queries::scaling_signals`](super::Queries::scaling_signals) reads the timestamps of to
/// find the oldest waiting job: a bounded read, never a scan of the queue.
pub const SCALING_LOOKAHEAD: usize = 16;

/// What a store reads for [`ScalingSignals`], before the age is worked out: counts, and the
/// two times the age is measured from. Built by a backend and turned into signals with
/// [`ScalingSignals::from_observation`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScalingObservation {
    /// Waiting jobs without a priority, paused queue or not.
    pub waiting: u64,
    /// Waiting jobs with a priority.
    pub prioritized: u64,
    /// Delayed jobs due at or before `now_ms`.
    pub delayed_due: u64,
    /// Jobs being processed.
    pub active: u64,
    /// Whether the queue is paused.
    pub paused: bool,
    /// The smallest `timestamp` (Unix ms) among the next [`SCALING_LOOKAHEAD`] waiting jobs and
    /// the next [`SCALING_LOOKAHEAD`] prioritized jobs in processing order; `None` when none.
    pub oldest_ready_timestamp: Option<u64>,
    /// The earliest due time (Unix ms) of any delayed job, due or not; `None` when none.
    pub earliest_due: Option<u64>,
    /// The backend's clock when it read the rest, Unix ms.
    pub now_ms: u64,
}

/// A queue's autoscaling signals, the same on every store (see
/// [`Queue::scaling_signals`](crate::Queue::scaling_signals)).
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::backend::{ScalingObservation, ScalingSignals};
///
/// let signals = ScalingSignals::from_observation(ScalingObservation {
///     waiting: 3,
///     prioritized: 1,
///     delayed_due: 2,
///     active: 4,
///     paused: false,
///     oldest_ready_timestamp: Some(1_000),
///     earliest_due: Some(500),
///     now_ms: 10_000,
/// });
/// assert_eq!(signals.backlog, 6);
/// // The due delayed job has been due since 500: 9.5 s.
/// assert_eq!(signals.oldest_waiting_age, Some(Duration::from_millis(9_500)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScalingSignals {
    /// Waiting jobs without a priority. Counted whether or not the queue is paused, as
    /// `get_job_counts` counts them on both stores.
    pub waiting: u64,
    /// Waiting jobs with a priority.
    pub prioritized: u64,
    /// Delayed jobs whose due time has passed by the backend's clock (at or before now), which
    /// the next worker fetch promotes.
    pub delayed_due: u64,
    /// `waiting + prioritized + delayed_due`: the jobs a worker could start now.
    pub backlog: u64,
    /// Jobs being processed.
    pub active: u64,
    /// How long the oldest ready job has waited; `None` when the backlog is empty.
    ///
    /// Now (the backend's clock) minus the earliest of: the `timestamp` of the oldest of the
    /// next [`SCALING_LOOKAHEAD`] waiting and the next [`SCALING_LOOKAHEAD`] prioritized jobs
    /// (in the order workers take them), and the due time of the earliest due delayed job.
    /// Exact for FIFO queues; a job further back than the lookahead (behind LIFO jobs, retried
    /// jobs or, among prioritized jobs, behind higher priorities) is not seen, so the age can
    /// be less than the oldest job's. A job stamped after now (another host's clock) counts
    /// as zero.
    pub oldest_waiting_age: Option<Duration>,
    /// Whether the queue is paused (its workers take nothing while it is).
    pub paused: bool,
}

impl ScalingSignals {
    /// The signals a store's observation gives: the backlog summed, the age worked out.
    #[must_use]
    pub fn from_observation(o: ScalingObservation) -> Self {
        let due = o.earliest_due.filter(|due| *due <= o.now_ms);
        let since = match (o.oldest_ready_timestamp, due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Self {
            waiting: o.waiting,
            prioritized: o.prioritized,
            delayed_due: o.delayed_due,
            backlog: o
                .waiting
                .saturating_add(o.prioritized)
                .saturating_add(o.delayed_due),
            active: o.active,
            oldest_waiting_age: since.map(|t| Duration::from_millis(o.now_ms.saturating_sub(t))),
            paused: o.paused,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{ScalingObservation, ScalingSignals};

    fn obs(ready: Option<u64>, due: Option<u64>) -> ScalingObservation {
        ScalingObservation {
            oldest_ready_timestamp: ready,
            earliest_due: due,
            now_ms: 10_000,
            ..ScalingObservation::default()
        }
    }

    fn age(o: ScalingObservation) -> Option<Duration> {
        ScalingSignals::from_observation(o).oldest_waiting_age
    }

    #[test]
    fn the_age_is_from_the_earliest_ready_or_due_time() {
        assert_eq!(age(obs(None, None)), None);
        assert_eq!(age(obs(Some(4_000), None)), Some(Duration::from_secs(6)));
        assert_eq!(
            age(obs(Some(4_000), Some(2_000))),
            Some(Duration::from_secs(8))
        );
        assert_eq!(
            age(obs(Some(1_000), Some(2_000))),
            Some(Duration::from_secs(9))
        );
        // A delayed job not due yet is no part of it.
        assert_eq!(age(obs(None, Some(10_001))), None);
        assert_eq!(age(obs(None, Some(10_000))), Some(Duration::ZERO));
        // A job stamped ahead of this clock has waited for nothing yet.
        assert_eq!(age(obs(Some(12_000), None)), Some(Duration::ZERO));
    }

    #[test]
    fn the_backlog_is_the_sum_of_the_ready_jobs() {
        let s = ScalingSignals::from_observation(ScalingObservation {
            waiting: 2,
            prioritized: 3,
            delayed_due: 4,
            active: 7,
            ..ScalingObservation::default()
        });
        assert_eq!((s.backlog, s.active), (9, 7));
    }
}
