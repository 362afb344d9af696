//! Why a job's cancellation token was cancelled (upstream: the reason given to the job's
//! `AbortController`).

use std::sync::{Arc, OnceLock};

/// Why the token a processor was given was cancelled; read it with
/// [`ActiveJob::cancel_reason`](super::ActiveJob::cancel_reason).
///
/// ```no_run
/// # async fn demo<B: bullmq_core::backend::Backend>(job: bullmq_core::worker::ActiveJob<B>, cancel: bullmq_core::worker::CancellationToken) -> bullmq_core::worker::ProcessResult {
/// use bullmq_core::worker::{CancelReason, JobError};
///
/// tokio::select! {
///     () = cancel.cancelled() => match job.cancel_reason() {
///         // Another worker may run the job now: stop without touching it.
///         Some(CancelReason::LockLost) => Err(JobError::failed("lock lost")),
///         Some(CancelReason::Requested(why)) => Err(JobError::unrecoverable(why.unwrap_or_default())),
///         _ => Err(JobError::failed("worker closing")),
///     },
///     () = tokio::time::sleep(std::time::Duration::from_secs(60)) => Ok(serde_json::json!("done")),
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelReason {
    /// The job's lock could not be renewed: the store no longer holds it for this worker, and
    /// another worker may already run the job. Whatever the processor returns is discarded.
    LockLost,
    /// The worker was closed with force, or its close timeout ran out: the job stays active
    /// for the stalled check to hand it to a worker again.
    Closing,
    /// [`Worker::cancel_job`](super::Worker::cancel_job) or
    /// [`cancel_all_jobs`](super::Worker::cancel_all_jobs), with the caller's reason (Node's
    /// `cancelJob(jobId, reason)`). The job ends as the processor's return says.
    Requested(Option<String>),
}

/// The reason of one attempt's cancellation, set once (the first cause wins), shared by the
/// lock tracker, the worker and the processor's [`ActiveJob`](super::ActiveJob).
#[derive(Debug, Clone, Default)]
pub(crate) struct CancelCell(Arc<OnceLock<CancelReason>>);

impl CancelCell {
    /// Records `reason` unless one is already there.
    pub(crate) fn set(&self, reason: CancelReason) {
        let _ = self.0.set(reason);
    }

    /// The reason, once cancelled.
    pub(crate) fn get(&self) -> Option<&CancelReason> {
        self.0.get()
    }

    /// True when the attempt's lock was found lost.
    pub(crate) fn lock_lost(&self) -> bool {
        self.get() == Some(&CancelReason::LockLost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_wins() {
        let cell = CancelCell::default();
        assert_eq!(cell.get(), None);
        cell.set(CancelReason::LockLost);
        cell.clone().set(CancelReason::Closing);
        assert!(cell.lock_lost());
        assert_eq!(cell.get(), Some(&CancelReason::LockLost));
    }
}
