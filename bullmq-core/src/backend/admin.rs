//! Operations on the whole queue: pause, drain, clean, obliterate, bulk retry and promote.

use std::future::Future;
use std::time::Duration;

use crate::job::FinishedState;
use crate::{JobId, JobState, Result};

/// Progress of an operation that works in batches: call again until it is `Done`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batch {
    /// Nothing is left.
    Done,
    /// More remains.
    More,
}

/// Arguments of [`Admin::obliterate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObliterateArgs {
    /// Also when jobs are active.
    pub force: bool,
    /// Jobs removed per batch.
    pub count: u32,
}

/// Why obliteration refused to go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ObliterateRefusal {
    /// The queue must be paused first.
    #[error("cannot obliterate a queue that is not paused")]
    NotPaused,
    /// Jobs are active and `force` was not set.
    #[error("cannot obliterate a queue with active jobs unless forced")]
    ActiveJobs,
}

/// Queue-wide operations (upstream: `pause`, `drain`, `cleanJobsByState`, `obliterate`,
/// `retryFinishedJobs`, `promoteJobs`, `removeOrphanedJobs`).
pub trait Admin: Send + Sync {
    /// Pauses (`true`) or resumes (`false`) the queue.
    fn pause(&self, pause: bool) -> impl Future<Output = Result<()>> + Send;

    /// Removes waiting jobs, and delayed ones with `delayed`; scheduler jobs stay.
    fn drain(&self, delayed: bool) -> impl Future<Output = Result<()>> + Send;

    /// Removes up to `limit` (0 = all) jobs in `state` finished or added before `before_ms`;
    /// returns their ids.
    fn clean_jobs_by_state(
        &self,
        state: JobState,
        before_ms: u64,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<JobId>>> + Send;

    /// Removes one batch of everything the queue holds.
    fn obliterate(
        &self,
        args: ObliterateArgs,
    ) -> impl Future<Output = Result<Result<Batch, ObliterateRefusal>>> + Send;

    /// Moves one batch of `count` finished jobs in `state` (finished before `before_ms`) back to
    /// wait.
    fn retry_finished_jobs(
        &self,
        state: FinishedState,
        count: u32,
        before_ms: u64,
    ) -> impl Future<Output = Result<Batch>> + Send;

    /// Makes one batch of `count` delayed jobs ready now.
    fn promote_jobs(&self, count: u32) -> impl Future<Output = Result<Batch>> + Send;

    /// Removes job keys that no state set references; returns how many.
    fn remove_orphaned_jobs(
        &self,
        count: u32,
        limit: u32,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Sets the queue-wide rate limit window by hand (upstream: `setRateLimit`).
    fn set_rate_limit(&self, expire: Duration) -> impl Future<Output = Result<()>> + Send;

    /// Removes the rate-limit counter; true if there was one.
    fn remove_rate_limit_key(&self) -> impl Future<Output = Result<bool>> + Send;

    /// Removes the pre-5.0 priority helper key; returns how many keys were removed.
    fn remove_deprecated_priority_key(&self) -> impl Future<Output = Result<u64>> + Send;
}
