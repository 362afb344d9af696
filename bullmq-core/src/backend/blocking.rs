//! The worker's blocking wait for work.

use std::future::Future;
use std::time::Duration;

use crate::Result;

/// What woke a waiting worker (upstream: the member and score popped from the marker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// `0` when jobs are ready, `1` for a delayed job.
    pub member: String,
    /// Unix ms from which the job can be taken (0 = now).
    pub score: u64,
}

/// The blocking wait (upstream: `waitForJob`, `disconnectBlocking`, `reconnectBlocking`).
pub trait Blocking: Send + Sync {
    /// Waits up to `timeout` on the dedicated blocking connection for a sign of work.
    fn wait_for_job(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<Option<Marker>>> + Send;

    /// Interrupts a wait in progress, so a closing worker does not sit out its timeout.
    fn disconnect_blocking(&self, wait: bool) -> impl Future<Output = Result<()>> + Send;

    /// Reconnects the blocking connection after an interrupt.
    fn reconnect_blocking(&self) -> impl Future<Output = Result<()>> + Send;
}
