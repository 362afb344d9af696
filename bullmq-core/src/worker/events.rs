//! The worker's local events (upstream: the `Worker` class's emitter), as a broadcast stream.

use std::sync::Arc;

use crate::{Error, Job, JobId};

/// Something that happened in this worker. Subscribe with
/// [`Worker::events`](super::Worker::events); a slow subscriber misses the oldest events
/// (`RecvError::Lagged`) rather than slowing the worker down.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum WorkerEvent {
    /// A job was taken and is about to be processed.
    Active {
        /// The job.
        job: Arc<Job>,
    },
    /// A processor reported progress.
    Progress {
        /// The job's id.
        job_id: JobId,
        /// The progress, as stored.
        progress: serde_json::Value,
    },
    /// A job completed.
    Completed {
        /// The job as it was processed.
        job: Arc<Job>,
        /// The return value as the JSON text stored.
        return_value: String,
    },
    /// A job attempt failed (retried or failed for good, see `retried`).
    Failed {
        /// The job as it was processed.
        job: Arc<Job>,
        /// The failure reason stored.
        reason: String,
        /// True when the job will run again (moved to delayed or back to wait).
        retried: bool,
    },
    /// Something went wrong in the worker; it carries on.
    Error(Arc<Error>),
    /// The stalled-jobs check moved this job back to wait (or failed it).
    Stalled {
        /// The job's id.
        job_id: JobId,
    },
    /// The lock of a job being processed could not be renewed; its token was cancelled with
    /// [`CancelReason::LockLost`](super::CancelReason::LockLost). It is the only report of
    /// that loss: the job's late finish, refused by the store, is not reported again.
    LockLost {
        /// The job's id.
        job_id: JobId,
    },
    /// The locks of these jobs were renewed (upstream: `locksRenewed`, whose `count` is
    /// `job_ids.len()`).
    LocksRenewed {
        /// The jobs whose locks were extended.
        job_ids: Vec<JobId>,
    },
    /// The queue has no more jobs ready.
    Drained,
    /// The worker paused.
    Paused,
    /// The worker resumed.
    Resumed,
    /// The worker started closing.
    Closing,
    /// The worker closed.
    Closed,
}
