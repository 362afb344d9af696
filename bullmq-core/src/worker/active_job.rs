//! [`ActiveJob`]: the job a processor works on, with the calls a Node.js processor makes on
//! its `job` (progress, logs, data, lock).

use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::cancel::{CancelCell, CancelReason};
use super::events::WorkerEvent;
use super::shared::Shared;
use crate::backend::{Backend, LockToken};
use crate::{Job, JobRef, Queue, Result};

/// The job being processed, held with its lock token. Reads as a [`Job`] (`job.data_as()`,
/// `job.attempts_made`, …), its `data` as `JSON.parse` gives it to a Node.js processor
/// ([`js_view`](crate::json::js_view): JavaScript's key order, compact).
pub struct ActiveJob<B> {
    job: Arc<Job>,
    token: LockToken,
    shared: Arc<Shared<B>>,
    cancel: CancelCell,
}

impl<B> Deref for ActiveJob<B> {
    type Target = Job;

    fn deref(&self) -> &Job {
        &self.job
    }
}

impl<B> std::fmt::Debug for ActiveJob<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveJob")
            .field("id", &self.job.id)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl<B> ActiveJob<B> {
    pub(crate) fn new(
        job: Arc<Job>,
        token: LockToken,
        shared: Arc<Shared<B>>,
        cancel: CancelCell,
    ) -> Self {
        Self {
            job,
            token,
            shared,
            cancel,
        }
    }

    /// Why the processor's cancellation token was cancelled: the lock was lost, the worker is
    /// closing, or [`Worker::cancel_job`](super::Worker::cancel_job) asked (with its reason);
    /// `None` while it is not cancelled.
    #[must_use]
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        self.cancel.get().cloned()
    }

    /// The job as taken.
    #[must_use]
    pub fn job(&self) -> &Job {
        &self.job
    }

    /// The token the job's lock is held with.
    #[must_use]
    pub fn token(&self) -> &LockToken {
        &self.token
    }

    /// The worker's queue, for anything else (adding jobs, reading other jobs).
    #[must_use]
    pub fn queue(&self) -> &Queue<B> {
        &self.shared.queue
    }

    /// The job's handle, moving it as this worker does.
    #[must_use]
    pub fn handle(&self) -> JobRef<'_, B> {
        self.shared.job_handle(&self.job)
    }
}

impl<B: Backend> ActiveJob<B> {
    /// Stores the job's progress (any JSON value) and emits `progress`, here and on the
    /// queue's event stream.
    pub async fn update_progress<T: Serialize + ?Sized>(&self, progress: &T) -> Result<()> {
        self.handle().update_progress(progress).await?;
        tracing::debug!(target: "bullmq", job_id = %self.job.id, "job progress");
        if self.shared.observed() {
            let progress = serde_json::to_value(progress).unwrap_or_default();
            self.shared.emit(WorkerEvent::Progress {
                job_id: self.job.id.clone(),
                progress,
            });
        }
        Ok(())
    }

    /// Appends a line to the job's logs; returns how many lines it has.
    pub async fn log(&self, row: &str) -> Result<u64> {
        self.handle().log(row).await
    }

    /// Replaces the job's data.
    pub async fn update_data<T: Serialize + ?Sized>(&self, data: &T) -> Result<()> {
        self.handle().update_data(data).await
    }

    /// The return values of the job's completed children, by child key (Node.js's
    /// `job.getChildrenValues()`): what a parent reads when it runs after its children.
    pub async fn get_children_values(&self) -> Result<BTreeMap<String, serde_json::Value>> {
        self.handle().get_children_values().await
    }

    /// The failures of children added with `ignoreDependencyOnFailure`, reason by child key
    /// (Node.js's `job.getIgnoredChildrenFailures()`).
    pub async fn get_ignored_children_failures(&self) -> Result<BTreeMap<String, String>> {
        self.handle().get_ignored_children_failures().await
    }

    /// Extends the job's lock by `duration` now (the worker renews it by itself too).
    pub async fn extend_lock(&self, duration: Duration) -> Result<bool> {
        self.handle().extend_lock(&self.token, duration).await
    }
}
