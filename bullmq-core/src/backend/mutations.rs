//! Changes to one job: data, progress, logs, delay, priority, removal, dependencies.

use std::future::Future;
use std::time::Duration;

use crate::{JobId, Result};

/// Job mutations (upstream: `updateData`, `updateProgress`, `addLog`, `clearLogs`,
/// `changeDelay`, `changePriority`, `remove`, `removeUnprocessedChildren`,
/// `removeChildDependency`, `removeDeduplicationKey`, `deleteDeduplicationKey`).
pub trait JobMutations: Send + Sync {
    /// Replaces the job's data (JSON text).
    fn update_data(&self, job_id: &JobId, data: &str) -> impl Future<Output = Result<()>> + Send;

    /// Sets the job's progress and emits a `progress` event.
    fn update_progress(
        &self,
        job_id: &JobId,
        progress: &serde_json::Value,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Appends a log line, keeping at most `keep_logs`; returns the number of lines.
    fn add_log(
        &self,
        job_id: &JobId,
        row: &str,
        keep_logs: Option<u32>,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Clears the job's log, keeping the newest `keep_logs` lines when given.
    fn clear_logs(
        &self,
        job_id: &JobId,
        keep_logs: Option<u32>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Reschedules a delayed job to run `delay` from now.
    fn change_delay(
        &self,
        job_id: &JobId,
        delay: Duration,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Changes a waiting job's priority (and lifo).
    fn change_priority(
        &self,
        job_id: &JobId,
        priority: u32,
        lifo: bool,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Removes a job (and its children); false if it, or a child, is locked.
    fn remove(
        &self,
        job_id: &JobId,
        remove_children: bool,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Removes the job's children that have not been processed.
    fn remove_unprocessed_children(
        &self,
        job_id: &JobId,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Detaches an unfinished child from `parent_key`; true if it was attached.
    fn remove_child_dependency(
        &self,
        job_id: &JobId,
        parent_key: &str,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Removes the deduplication key if `job_id` still holds it; true if removed.
    fn remove_deduplication_key(
        &self,
        deduplication_id: &str,
        job_id: &JobId,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Removes the deduplication key whoever holds it; true if there was one.
    fn delete_deduplication_key(
        &self,
        deduplication_id: &str,
    ) -> impl Future<Output = Result<bool>> + Send;
}
