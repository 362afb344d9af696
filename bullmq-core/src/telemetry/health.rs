//! Health of a worker or an event reader, for readiness and liveness probes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
#[derive(Debug)]
pub struct HealthTracker {
    healthy: AtomicBool,
    last_ok_ms: AtomicU64,
    failures: AtomicU64,
}

impl Default for HealthTracker {
    fn default() -> Self {
        Self {
            healthy: AtomicBool::new(true),
            last_ok_ms: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }
}

impl HealthTracker {
    /// A round trip succeeded at `now_ms`.
    pub fn record_ok(&self, now_ms: u64) {
        self.last_ok_ms.store(now_ms, Ordering::Relaxed);
        if !self.healthy.swap(true, Ordering::Relaxed) {
            self.failures.store(0, Ordering::Relaxed);
        }
    }

    /// A round trip failed for the connection's sake.
    pub fn record_failure(&self) {
        self.healthy.store(false, Ordering::Relaxed);
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// What it has seen.
    #[must_use]
    pub fn snapshot(&self) -> ConnectionHealth {
        let last = self.last_ok_ms.load(Ordering::Relaxed);
        ConnectionHealth {
            healthy: self.healthy.load(Ordering::Relaxed),
            last_ok_ms: (last != 0).then_some(last),
            consecutive_failures: self.failures.load(Ordering::Relaxed),
        }
    }
}
