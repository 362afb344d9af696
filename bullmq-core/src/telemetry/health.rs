//! Health of a worker or an event reader, for readiness and liveness probes.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Where a worker or reader is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Built, not started.
    Idle,
    /// Taking jobs (or reading events).
    Running,
    /// Paused: takes no job.
    Paused,
    /// Closing: finishing the jobs in progress.
    Closing,
    /// Closed.
    Closed,
    /// Stopped on its own, not closed: a worker whose main loop ended (its backend handle was
    /// closed from outside the worker, or it panicked), or a pool past its restart limit. Not
    /// ready, not live: restart it.
    Failed,
}

/// What the connections have shown lately.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionHealth {
    /// False from a connection failure until the next round trip that succeeds.
    pub healthy: bool,
    /// When the last round trip succeeded (Unix ms); `None` before the first.
    pub last_ok_ms: Option<u64>,
    /// Connection failures since the last success.
    pub consecutive_failures: u64,
}

/// A [`Worker`](crate::worker::Worker)'s health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerHealth {
    /// Running, paused, closing, …
    pub state: RunState,
    /// The connections.
    pub connection: ConnectionHealth,
    /// Jobs in progress.
    pub active_jobs: usize,
    /// Jobs processed at once at most.
    pub concurrency: usize,
}

impl WorkerHealth {
    /// Ready for traffic: running (or paused on purpose) over healthy connections.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        matches!(self.state, RunState::Running | RunState::Paused) && self.connection.healthy
    }
}

/// A [`QueueEvents`](crate::QueueEvents) reader's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderHealth {
    /// `Idle`, `Running` or `Closed`.
    pub state: RunState,
    /// The events connection.
    pub connection: ConnectionHealth,
}

impl ReaderHealth {
    /// Ready: reading over a healthy connection.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.state == RunState::Running && self.connection.healthy
    }
}

/// Tracks round trips as they succeed or fail; fed by the worker and the event reader, and
/// open to any other signal (a backend's own connection watch) through
/// [`record_ok`](Self::record_ok) and [`record_failure`](Self::record_failure).
///
/// One small lock keeps the three values consistent: a success and a failure racing never
/// leave a healthy connection with failures counted, nor an unhealthy one with none.
#[derive(Debug)]
pub struct HealthTracker {
    state: Mutex<ConnectionHealth>,
}

impl Default for HealthTracker {
    fn default() -> Self {
        Self {
            state: Mutex::new(ConnectionHealth {
                healthy: true,
                last_ok_ms: None,
                consecutive_failures: 0,
            }),
        }
    }
}

impl HealthTracker {
    fn state(&self) -> MutexGuard<'_, ConnectionHealth> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A round trip succeeded at `now_ms`.
    pub fn record_ok(&self, now_ms: u64) {
        let mut state = self.state();
        state.last_ok_ms = Some(now_ms);
        state.healthy = true;
        state.consecutive_failures = 0;
    }

    /// A round trip failed for the connection's sake.
    pub fn record_failure(&self) {
        let mut state = self.state();
        state.healthy = false;
        state.consecutive_failures = state.consecutive_failures.saturating_add(1);
    }

    /// What it has seen.
    #[must_use]
    pub fn snapshot(&self) -> ConnectionHealth {
        *self.state()
    }
}

#[cfg(test)]
mod tests {
    use super::HealthTracker;

    #[test]
    fn success_and_failure_racing_leave_a_consistent_state() {
        let tracker = HealthTracker::default();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for i in 1..=20_000 {
                    tracker.record_ok(i);
                }
            });
            scope.spawn(|| {
                for _ in 0..20_000 {
                    tracker.record_failure();
                }
            });
            scope.spawn(|| {
                for _ in 0..20_000 {
                    let seen = tracker.snapshot();
                    assert_eq!(seen.healthy, seen.consecutive_failures == 0, "{seen:?}");
                }
            });
        });
        let end = tracker.snapshot();
        assert_eq!(end.healthy, end.consecutive_failures == 0, "{end:?}");
    }
}
