//! Job locks held by workers.

use std::future::Future;
use std::time::Duration;

use super::types::LockToken;
use crate::{JobId, Result};

/// Lock renewal (upstream: `extendLock`, `extendLocks`).
pub trait Locks: Send + Sync {
    /// Extends one lock; false if the job is no longer held with `token`.
    fn extend_lock(
        &self,
        job_id: &JobId,
        token: &LockToken,
        duration: Duration,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Extends many locks in one round trip; returns the ids whose lock was lost.
    fn extend_locks(
        &self,
        locks: &[(JobId, LockToken)],
        duration: Duration,
    ) -> impl Future<Output = Result<Vec<JobId>>> + Send;
}
