//! Time as the queue sees it: milliseconds since the Unix epoch, injectable for tests.
//!
//! Time is injected once, into the backend (`RedisBackend::with_clock`,
//! `PostgresBackend::with_clock`, `AnyBackend::with_clock`); the `Queue`, `Worker`,
//! `FlowProducer`, `JobScheduler` and `QueueEvents` built on it read that clock through
//! [`Lifecycle::clock`](crate::backend::Lifecycle::clock), so a job is never stamped by two.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of "now" in Unix milliseconds, the unit every BullMQ timestamp uses.
///
/// Every script argument and SQL parameter that carries a time is read from a `Clock`, so
/// delayed jobs, schedulers and backoff can be tested without sleeping.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    }
}

/// The wall clock set apart by a fixed offset: a host whose clock runs ahead (positive) or
/// behind (negative) the others, for testing what clock skew does (RELIABILITY R18).
///
/// ```
/// use bullmq_core::clock::{Clock, OffsetClock, SystemClock};
///
/// let behind = OffsetClock::new(-5_000);
/// assert!(behind.now_ms() + 4_000 < SystemClock.now_ms());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct OffsetClock {
    offset_ms: i64,
}

impl OffsetClock {
    /// The wall clock plus `offset_ms` (negative: behind).
    #[must_use]
    pub const fn new(offset_ms: i64) -> Self {
        Self { offset_ms }
    }
}

impl Clock for OffsetClock {
    fn now_ms(&self) -> u64 {
        SystemClock.now_ms().saturating_add_signed(self.offset_ms)
    }
}

/// A clock that only moves when told to.
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::clock::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_700_000_000_000);
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(clock.now_ms(), 1_700_000_002_000);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock stopped at `now_ms`.
    #[must_use]
    pub fn new(now_ms: u64) -> Self {
        Self(Arc::new(AtomicU64::new(now_ms)))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock to `now_ms`.
    pub fn set(&self, now_ms: u64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
