//! Waiting for one job to finish (Node.js' `Job.waitUntilFinished`).

use std::time::Duration;

use super::reader::{Finish, QueueEvents};
use crate::backend::{FinishStatus, Queries};
use crate::queue::JobRef;
use crate::{Error, JobId};

/// Why [`QueueEvents::wait_until_finished`] did not return a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WaitError {
    /// The job failed for good; `reason` is its `failedReason`.
    #[error("job {job_id} failed: {reason}")]
    Failed {
        /// The job.
        job_id: JobId,
        /// Its failure reason (the processor's error message).
        reason: String,
    },
    /// No finish arrived within the time allowed.
    #[error("job {job_id} did not finish within {} ms", ttl.as_millis())]
    TimedOut {
        /// The job.
        job_id: JobId,
        /// The time allowed.
        ttl: Duration,
    },
    /// The job does not exist (it was never added, or was removed).
    #[error("job {job_id} does not exist")]
    NotFound {
        /// The job.
        job_id: JobId,
    },
    /// The job completed, but its stored return value is not JSON.
    #[error("job {job_id} completed with a return value that is not JSON ({reason}): {raw:?}")]
    ReturnValue {
        /// The job.
        job_id: JobId,
        /// The stored text.
        raw: String,
        /// Why it does not parse.
        reason: String,
    },
    /// The [`QueueEvents`] reader was closed before the job finished.
    #[error("the queue events reader closed before job {job_id} finished")]
    Closed {
        /// The job.
        job_id: JobId,
    },
    /// Reading the job's state failed.
    #[error(transparent)]
    Backend(#[from] Error),
}

impl<E> QueueEvents<E>
where
    E: Queries,
{
    /// Waits until the job completes (its return value, JSON-decoded; `null` when it returned
    /// nothing) or fails for good ([`WaitError::Failed`] with its reason), as Node.js'
    /// `job.waitUntilFinished(queueEvents, ttl)`: it listens first, then reads the job's state,
    /// so a job that already finished answers at once and one finishing meanwhile is not
    /// missed. `ttl`: give up after this long ([`WaitError::TimedOut`]); `None` waits as long
    /// as the reader runs.
    pub async fn wait_until_finished(
        &self,
        job_id: &JobId,
        ttl: Option<Duration>,
    ) -> Result<serde_json::Value, WaitError> {
        wait_until_finished(self.backend(), self, job_id, ttl).await
    }
}

impl<B> JobRef<'_, B> {
    /// Node.js' `job.waitUntilFinished(queueEvents, ttl)`: see
    /// [`QueueEvents::wait_until_finished`] (`events` reads this job's queue).
    pub async fn wait_until_finished<E: Queries>(
        &self,
        events: &QueueEvents<E>,
        ttl: Option<Duration>,
    ) -> Result<serde_json::Value, WaitError> {
        events.wait_until_finished(self.id(), ttl).await
    }
}

async fn wait_until_finished<Q: Queries, E>(
    checker: &Q,
    events: &QueueEvents<E>,
    job_id: &JobId,
    ttl: Option<Duration>,
) -> Result<serde_json::Value, WaitError> {
    let waited = async {
        // Listen first, and only read the state once the reader knows where it reads from:
        // a finish after the read is then an event the reader will see.
        let rx = events
            .watch_job(job_id.as_str())
            .ok_or_else(|| WaitError::Closed {
                job_id: job_id.clone(),
            })?;
        events
            .wait_until_ready()
            .await
            .map_err(|_| WaitError::Closed {
                job_id: job_id.clone(),
            })?;
        let finish = match checker.is_finished(job_id).await? {
            FinishStatus::Missing => {
                return Err(WaitError::NotFound {
                    job_id: job_id.clone(),
                });
            }
            FinishStatus::Completed(value) => Finish::Completed(value),
            FinishStatus::Failed(reason) => Finish::Failed(reason),
            FinishStatus::Pending => rx.await.map_err(|_| WaitError::Closed {
                job_id: job_id.clone(),
            })?,
        };
        outcome(job_id, finish)
    };
    let result = match ttl {
        None => waited.await,
        Some(ttl) => tokio::time::timeout(ttl, waited).await.unwrap_or_else(|_| {
            Err(WaitError::TimedOut {
                job_id: job_id.clone(),
                ttl,
            })
        }),
    };
    events.unwatch_closed(job_id.as_str());
    result
}

fn outcome(job_id: &JobId, finish: Finish) -> Result<serde_json::Value, WaitError> {
    match finish {
        Finish::Failed(reason) => Err(WaitError::Failed {
            job_id: job_id.clone(),
            reason: reason.unwrap_or_default(),
        }),
        // Node.js resolves with `undefined` when there is no return value.
        Finish::Completed(None) => Ok(serde_json::Value::Null),
        Finish::Completed(Some(raw)) => {
            serde_json::from_str(&raw).map_err(|e| WaitError::ReturnValue {
                job_id: job_id.clone(),
                reason: e.to_string(),
                raw,
            })
        }
    }
}
