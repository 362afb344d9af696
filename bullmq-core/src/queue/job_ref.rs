//! [`JobRef`]: one job of a queue, with the methods of Node.js BullMQ's `Job` class.
//!
//! [`Job`] stays plain data; the operations live on a handle borrowed from the [`Queue`],
//! which owns the backend those operations need (and, through it, the clock). Each group of
//! methods asks only for the backend sections it uses.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::Queue;
use crate::backend::{
    CompleteArgs, DelayArgs, Dependencies, DependenciesQuery, DependencyKind, FieldUpdates,
    Finished, JobMutations, Lifecycle, LockToken, Locks, Queries, ReprocessOptions, Transitions,
    WorkerSettings,
};
use crate::codec::CodecError;
use crate::failed_attempt::retry::{self, RetryRules};
use crate::failed_attempt::{self, FailOutcome, JobFailure, Mover};
use crate::job::{FinishedState, JobDecodeError};
use crate::options::{ParentOptions, ValidationError};
use crate::telemetry::spans::{self, Settle};
use crate::{Error, Job, JobId, JobState, Result, ScriptError, ScriptErrorCode};
use tracing::Instrument;

/// Every dependency list, in the order upstream counts them when asked for none.
const ALL_KINDS: [DependencyKind; 4] = [
    DependencyKind::Processed,
    DependencyKind::Unprocessed,
    DependencyKind::Ignored,
    DependencyKind::Failed,
];

/// A job of a queue, by id: what Node.js BullMQ's `Job` instance can do.
///
/// Obtained from [`Queue::job`] (id only) or [`Queue::job_of`] (a job already read). Methods
/// that need the job's options or counters (`log`'s `keepLogs`, `move_to_failed`'s attempts
/// and `stackTraceLimit`, `retry`'s `lifo`) use the borrowed job when there is one, as Node.js
/// uses its instance, and otherwise read the job first.
///
/// ```no_run
/// # async fn demo<B: bullmq_core::backend::Backend>(queue: bullmq_core::Queue<B>) -> bullmq_core::Result<()> {
/// use bullmq_core::JobId;
///
/// let job = queue.job(JobId::from("42"));
/// job.update_progress(&50).await?;
/// let lines = job.log("half way").await?;
/// assert!(job.is_waiting().await? || job.is_active().await?);
/// # let _ = lines; Ok(()) }
/// ```
pub struct JobRef<'q, B> {
    queue: &'q Queue<B>,
    id: JobId,
    job: Option<&'q Job>,
    /// The settings of the worker moving the job; none for a queue's own handle.
    worker: Option<Arc<WorkerSettings>>,
    /// That worker's retry rules (`maxStartedAttempts`, custom backoffs), when it has any.
    /// Only read, never left half-changed by a panic: asserting unwind safety keeps
    /// `JobRef` `UnwindSafe` although a custom backoff is a `dyn Fn`.
    retry: Option<AssertUnwindSafe<&'q RetryRules>>,
}

impl<B> Clone for JobRef<'_, B> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue,
            id: self.id.clone(),
            job: self.job,
            worker: self.worker.clone(),
            retry: self.retry.as_ref().map(|rules| AssertUnwindSafe(rules.0)),
        }
    }
}

impl<B> fmt::Debug for JobRef<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobRef")
            .field("queue", self.queue.name())
            .field("id", &self.id)
            .field("loaded", &self.job.is_some())
            .finish()
    }
}

impl<B> Queue<B> {
    /// A handle on the job `id` of this queue; nothing is read until a method asks.
    pub fn job(&self, id: JobId) -> JobRef<'_, B> {
        JobRef {
            queue: self,
            id,
            job: None,
            worker: None,
            retry: None,
        }
    }

    /// A handle on a job already read, whose options and counters the methods use as they are.
    pub fn job_of<'q>(&'q self, job: &'q Job) -> JobRef<'q, B> {
        JobRef {
            queue: self,
            id: job.id.clone(),
            job: Some(job),
            worker: None,
            retry: None,
        }
    }
}

impl<'q, B> JobRef<'q, B> {
    /// Moves the job as the worker with `settings` does (manual processing): the finishing
    /// moves then send the worker's name, lock duration, limiter and metrics setting, and
    /// fall back on its retention, as a Node.js `Job` obtained from a `Worker` does.
    #[must_use]
    pub fn by_worker(mut self, settings: Arc<WorkerSettings>) -> Self {
        self.worker = Some(settings);
        self
    }

    /// Fails attempts by `rules`, the retry rules of the worker this handle came from.
    #[must_use]
    pub(crate) fn with_retry_rules(mut self, rules: &'q RetryRules) -> Self {
        self.retry = Some(AssertUnwindSafe(rules));
        self
    }

    /// The settings sent with a finishing move (none for a queue's own handle).
    fn worker_settings(&self) -> Arc<WorkerSettings> {
        self.worker.clone().unwrap_or_default()
    }

    /// Taking the next job locks it for the worker's lock duration: without a worker's
    /// settings there is none, and the script would take the job and fail to lock it.
    fn check_fetch(&self, fetch_next: bool) -> Result<()> {
        if fetch_next && self.worker.is_none() {
            return Err(ValidationError::single(
                "job move",
                "fetch_next",
                "needs a worker's settings: take the handle from `Worker::job`",
            )
            .into());
        }
        Ok(())
    }

    /// The job's id.
    #[must_use]
    pub fn id(&self) -> &JobId {
        &self.id
    }

    /// The job this handle was made from, if any.
    #[must_use]
    pub fn job(&self) -> Option<&'q Job> {
        self.job
    }

    fn not_found(&self, command: &'static str) -> Error {
        ScriptError::new(ScriptErrorCode::JobNotFound, command, self.id.as_str()).into()
    }
}

fn encode<T: Serialize + ?Sized>(what: &'static str, value: &T) -> Result<String> {
    crate::json::to_string(value).map_err(|e| {
        CodecError::Encode {
            what,
            reason: e.to_string(),
        }
        .into()
    })
}

impl<'q, B: Queries> JobRef<'q, B> {
    /// The borrowed job, or the job as stored now.
    async fn load(&self, command: &'static str) -> Result<Cow<'q, Job>> {
        if let Some(job) = self.job {
            return Ok(Cow::Borrowed(job));
        }
        match self.queue.backend.get_job(&self.id).await? {
            Some(job) => Ok(Cow::Owned(job)),
            None => Err(self.not_found(command)),
        }
    }

    /// The job's state; `None` when there is no such job (upstream: `'unknown'`).
    pub async fn get_state(&self) -> Result<Option<JobState>> {
        self.queue.backend.get_state(&self.id).await
    }

    async fn is_in(&self, state: JobState) -> Result<bool> {
        self.queue.backend.is_job_in_state(state, &self.id).await
    }

    /// True when the job is completed.
    pub async fn is_completed(&self) -> Result<bool> {
        self.is_in(JobState::Completed).await
    }

    /// True when the job failed for good.
    pub async fn is_failed(&self) -> Result<bool> {
        self.is_in(JobState::Failed).await
    }

    /// True when the job is delayed.
    pub async fn is_delayed(&self) -> Result<bool> {
        self.is_in(JobState::Delayed).await
    }

    /// True when a worker holds the job.
    pub async fn is_active(&self) -> Result<bool> {
        self.is_in(JobState::Active).await
    }

    /// True when the job is waiting (without priority).
    pub async fn is_waiting(&self) -> Result<bool> {
        self.is_in(JobState::Waiting).await
    }

    /// True when the job waits for its children.
    pub async fn is_waiting_children(&self) -> Result<bool> {
        self.is_in(JobState::WaitingChildren).await
    }

    /// True when the job waits with a priority.
    pub async fn is_prioritized(&self) -> Result<bool> {
        self.is_in(JobState::Prioritized).await
    }

    /// The return values of the completed children, by child key, parsed from JSON as Node.js
    /// parses them.
    pub async fn get_children_values(&self) -> Result<BTreeMap<String, serde_json::Value>> {
        let values = self
            .queue
            .backend
            .get_processed_children_values(&self.id)
            .await?;
        values
            .into_iter()
            .map(|(key, text)| match serde_json::from_str(&text) {
                Ok(value) => Ok((key, value)),
                Err(e) => Err(JobDecodeError {
                    job_id: self.id.to_string(),
                    field: "processed",
                    reason: format!("child {key}: {e}"),
                }
                .into()),
            })
            .collect()
    }

    /// The failures of children added with `ignoreDependencyOnFailure`: reason by child key.
    pub async fn get_ignored_children_failures(&self) -> Result<BTreeMap<String, String>> {
        let failures = self
            .queue
            .backend
            .get_ignored_children_failures(&self.id)
            .await?;
        Ok(failures.into_iter().collect())
    }

    /// The old name of [`get_ignored_children_failures`](Self::get_ignored_children_failures),
    /// which upstream keeps as an alias reading the same hash.
    #[deprecated(note = "use `get_ignored_children_failures`, as upstream advises")]
    pub async fn get_failed_children_values(&self) -> Result<BTreeMap<String, String>> {
        self.get_ignored_children_failures().await
    }

    /// Pages of the job's dependency lists; an empty query reads every list whole.
    pub async fn get_dependencies(&self, query: &DependenciesQuery) -> Result<Dependencies> {
        self.queue.backend.get_dependencies(&self.id, query).await
    }

    /// The sizes of the dependency lists asked for (all four when none), in that order.
    pub async fn get_dependencies_count(
        &self,
        kinds: &[DependencyKind],
    ) -> Result<Vec<(DependencyKind, u64)>> {
        let kinds = if kinds.is_empty() { &ALL_KINDS } else { kinds };
        let counts = self
            .queue
            .backend
            .get_dependency_counts(&self.id, kinds)
            .await?;
        Ok(kinds
            .iter()
            .copied()
            .zip(counts.into_iter().chain(std::iter::repeat(0)))
            .collect())
    }
}

impl<B: JobMutations> JobRef<'_, B> {
    /// Replaces the job's data.
    pub async fn update_data<T: Serialize + ?Sized>(&self, data: &T) -> Result<()> {
        let data = encode("job data", data)?;
        self.queue.backend.update_data(&self.id, &data).await
    }

    /// Sets the job's progress (a number or any JSON value) and emits a `progress` event.
    pub async fn update_progress<T: Serialize + ?Sized>(&self, progress: &T) -> Result<()> {
        let progress = serde_json::to_value(progress).map_err(|e| CodecError::Encode {
            what: "job progress",
            reason: e.to_string(),
        })?;
        self.queue
            .backend
            .update_progress(&self.id, &progress)
            .await
    }

    /// Appends a line to the job's log and returns how many lines it has. The job's
    /// `keepLogs` applies when this handle was made from a job (as Node.js reads its
    /// instance's options); a handle made from an id keeps every line, as
    /// `Job.addJobLog(queue, id, row)` does.
    pub async fn log(&self, row: &str) -> Result<u64> {
        let keep = self.job.and_then(|job| job.opts.keep_logs);
        self.queue.backend.add_log(&self.id, row, keep).await
    }

    /// Clears the job's log, keeping the newest `keep` lines when given.
    pub async fn clear_logs(&self, keep: Option<u32>) -> Result<()> {
        self.queue.backend.clear_logs(&self.id, keep).await
    }

    /// Reschedules a delayed job to run `delay` from now.
    pub async fn change_delay(&self, delay: Duration) -> Result<()> {
        self.queue.backend.change_delay(&self.id, delay).await
    }

    /// Changes the job's priority (0 for none) and whether it goes to the front of the line.
    pub async fn change_priority(&self, priority: u32, lifo: bool) -> Result<()> {
        self.queue
            .backend
            .change_priority(&self.id, priority, lifo)
            .await
    }

    /// Removes the job, and its children when `remove_children` (upstream's default). False
    /// when it, or a child, is locked by a worker (upstream throws
    /// "could not be removed because it is locked by another worker").
    pub async fn remove(&self, remove_children: bool) -> Result<bool> {
        self.queue.backend.remove(&self.id, remove_children).await
    }

    /// Removes the job's children that are neither finished nor locked.
    pub async fn remove_unprocessed_children(&self) -> Result<()> {
        self.queue
            .backend
            .remove_unprocessed_children(&self.id)
            .await
    }
}

impl<B: JobMutations + Queries> JobRef<'_, B> {
    /// Detaches this unfinished job from its parent; true if it was attached, false when it
    /// has no parent or was no longer a pending dependency.
    pub async fn remove_child_dependency(&self) -> Result<bool> {
        let job = self.load("removeChildDependency").await?;
        let Some(parent_key) = job.parent_key.as_deref() else {
            return Ok(false);
        };
        self.queue
            .backend
            .remove_child_dependency(&self.id, parent_key)
            .await
    }
}

impl<B: Locks> JobRef<'_, B> {
    /// Extends the job's lock by `duration`; false when `token` no longer holds it.
    pub async fn extend_lock(&self, token: &LockToken, duration: Duration) -> Result<bool> {
        self.queue
            .backend
            .extend_lock(&self.id, token, duration)
            .await
    }
}

impl<B: Lifecycle> JobRef<'_, B> {
    /// What a child of this job takes as its parent: the job's id and its queue's qualified
    /// name, as Node.js writes `{ id: job.id, queue: job.queueQualifiedName }`. A processor
    /// that adds children to its own job, then waits for them, starts here.
    ///
    /// ```no_run
    /// # async fn demo<B: bullmq_core::backend::Backend>(
    /// #     parents: bullmq_core::Queue<B>,
    /// #     kids: bullmq_core::Queue<B>,
    /// # ) -> bullmq_core::Result<()> {
    /// use bullmq_core::{JobId, JobOptions};
    ///
    /// let parent = parents.job(JobId::from("42")).as_parent();
    /// assert_eq!(parent.id, "42");
    /// kids.add("child", &1, JobOptions::new().parent(parent)).await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn as_parent(&self) -> ParentOptions {
        ParentOptions::new(self.id.as_str(), self.queue.backend().qualified_name())
    }
}

impl<B: Transitions + Lifecycle> JobRef<'_, B> {
    /// Makes a delayed job ready now.
    pub async fn promote(&self) -> Result<()> {
        self.queue.backend.promote(&self.id).await
    }

    /// Moves the job, held with `token`, back to wait (or prioritized); returns how long the
    /// queue stays rate limited.
    pub async fn move_to_wait(&self, token: &LockToken) -> Result<Duration> {
        self.queue
            .backend
            .move_job_from_active_to_wait(&self.id, Some(token))
            .await
    }

    /// Parks the job, held with `token`, until its children finish; with `child`, only if that
    /// child is still pending. False when there is nothing to wait for.
    pub async fn move_to_waiting_children(
        &self,
        token: &LockToken,
        child: Option<&ParentOptions>,
    ) -> Result<bool> {
        let child_key = child.map(ParentOptions::key);
        self.queue
            .backend
            .move_to_waiting_children(&self.id, token, child_key.as_deref())
            .await
    }

    /// Moves the job, held with `token`, to delayed until `timestamp` (Unix ms; a past time
    /// means now), without counting an attempt. Returns the delay applied. From a typed
    /// instant: `move_to_delayed(UnixMillis::from(at).get(), ..)`.
    pub async fn move_to_delayed(&self, timestamp: u64, token: &LockToken) -> Result<Duration> {
        let now = self.queue.now_ms();
        let delay = Duration::from_millis(timestamp.saturating_sub(now));
        let args = DelayArgs {
            timestamp: now,
            delay,
            token: Some(token.clone()),
            skip_attempt: true,
            fields: FieldUpdates::default(),
            worker: self.worker_settings(),
            fetch_next: false,
        };
        self.queue.backend.move_to_delayed(&self.id, &args).await?;
        Ok(delay)
    }
}

impl<B: Transitions + Queries + Lifecycle> JobRef<'_, B> {
    /// Moves a completed or failed job back to wait to run again (upstream: `retry`).
    pub async fn retry(&self, state: FinishedState, opts: ReprocessOptions) -> Result<()> {
        let job = self.load("reprocessJob").await?;
        self.queue.backend.reprocess_job(&job, state, opts).await
    }

    /// Completes the job held with `token`, storing `return_value` as JSON. Retention follows
    /// the job's `removeOnComplete` (then the worker's, see [`by_worker`](Self::by_worker));
    /// with `fetch_next`, the next job is taken in the same round trip and locked with `token`
    /// (only on a worker's handle, [`by_worker`](Self::by_worker): [`Error::Invalid`] otherwise).
    pub async fn move_to_completed<T: Serialize + ?Sized>(
        &self,
        return_value: &T,
        token: &LockToken,
        fetch_next: bool,
    ) -> Result<Finished> {
        self.check_fetch(fetch_next)?;
        let return_value = encode("return value", return_value)?;
        let job = self.load("moveToFinished").await?;
        let worker = self.worker_settings();
        let args = CompleteArgs {
            token: token.clone(),
            return_value,
            keep: worker.keep_for(&job, FinishedState::Completed),
            worker,
            fetch_next,
        };
        // Node's `Job#moveToCompleted` span.
        let span = spans::settle(self.queue.name.as_str(), Settle::Complete, &job);
        self.queue
            .backend
            .move_to_completed(&job, &args)
            .instrument(span)
            .await
    }

    /// Fails the attempt of the job held with `token`, as Node.js does: the stack is appended
    /// to the job's stack traces (trimmed to `stackTraceLimit`), then, while attempts remain
    /// and the failure is recoverable, the job is retried after its backoff (delayed, or at
    /// once), else it fails for good with `removeOnFail` retention. The rule is the worker's
    /// own; on a handle from [`Worker::job`](crate::Worker::job) it also applies that worker's
    /// `max_started_attempts` and custom backoff strategies.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] (field `backoff.type`) when the job's backoff names a custom
    /// strategy this handle does not know; nothing is moved then.
    pub async fn move_to_failed(
        &self,
        failure: &JobFailure,
        token: &LockToken,
        fetch_next: bool,
    ) -> Result<FailOutcome> {
        self.check_fetch(fetch_next)?;
        let job = self.load("moveToFinished").await?;
        let no_rules = RetryRules::default();
        let rules = self.retry.as_ref().map_or(&no_rules, |rules| rules.0);
        let decision = retry::decide(&job, &failure.message, failure.unrecoverable, rules)
            .map_err(|unknown| unknown.refusal("the job was not moved"))?;
        let mover = Mover {
            token,
            worker: self.worker_settings(),
            fetch_next,
        };
        failed_attempt::fail_attempt(self.queue, &job, failure, decision, mover).await
    }
}
