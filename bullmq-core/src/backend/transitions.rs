//! Moving jobs between states.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::types::{LockToken, RateLimiter};
use crate::job::{FinishedState, JobDecodeError};
use crate::options::KeepJobs;
use crate::{Job, JobId, Result};

/// What a worker asks for when it takes a job (upstream: the `moveToActive` options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchParams {
    /// The worker's lock token for the job it takes.
    pub token: LockToken,
    /// How long the lock lasts unless renewed.
    pub lock_duration: Duration,
    /// The worker's rate limit, if any (the queue's own limit in meta wins for `max`).
    pub limiter: Option<RateLimiter>,
    /// The worker's name, stored as the job's `pb` field.
    pub worker_name: Option<String>,
}

/// The settings of the worker that moves a job, which Node.js sends with every finishing move
/// (`moveToFinished`'s options map, `moveToDelayed`'s when it fetches), whether or not the
/// move fetches the next job. A [`Queue`](crate::Queue)'s own handle has none of them: Node.js
/// `Job` methods on a job read through a `Queue` send them as nil, which `Default` gives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerSettings {
    /// The worker's name (`name`), stored as the next job's `pb`.
    pub name: Option<String>,
    /// The worker's lock duration (`lockDuration`).
    pub lock_duration: Option<Duration>,
    /// The worker's rate limit (`limiter`).
    pub limiter: Option<RateLimiter>,
    /// Data points of per-minute metrics to keep (`metrics.maxDataPoints`); `None`: no metrics.
    pub max_metrics_size: Option<u32>,
    /// The worker's `removeOnComplete`, used when the job has none.
    pub remove_on_complete: Option<KeepJobs>,
    /// The worker's `removeOnFail`, used when the job has none.
    pub remove_on_fail: Option<KeepJobs>,
}

impl WorkerSettings {
    /// The retention a finished `job` gets, as upstream's `getKeepJobs` decides: the job's own
    /// option, else the worker's, else keep all.
    #[must_use]
    pub fn keep_for(&self, job: &Job, state: FinishedState) -> KeepJobs {
        let (own, worker) = match state {
            FinishedState::Completed => (&job.opts.remove_on_complete, &self.remove_on_complete),
            FinishedState::Failed => (&job.opts.remove_on_fail, &self.remove_on_fail),
        };
        own.as_ref()
            .or(worker.as_ref())
            .cloned()
            .unwrap_or(KeepJobs::KeepAll)
    }
}

/// A job taken by a worker. The id is always known; the job itself may fail to decode if
/// another runtime wrote something unreadable, and the worker then fails it with that reason.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedJob {
    /// The job's id.
    pub id: JobId,
    /// The job, or why it could not be read.
    pub job: Result<Job, JobDecodeError>,
}

/// The answer of `moveToActive`: a job, or the reasons there is none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NextJob {
    /// The job taken, if any.
    pub job: Option<FetchedJob>,
    /// Set while the queue is rate limited: how long until it is not.
    pub rate_limit_ttl: Option<Duration>,
    /// When the next delayed job is due, Unix ms.
    pub next_delayed_at: Option<u64>,
}

/// The outcome of finishing a job.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Finished {
    /// The next job, when `fetch_next` was asked for.
    pub next: Option<NextJob>,
    /// The `finishedOn` that was stored, Unix ms.
    pub finished_on: u64,
}

/// Job hash fields a transition writes along the way (upstream: `fieldsToUpdate`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldUpdates {
    /// New `stacktrace`.
    pub stacktrace: Option<Vec<String>>,
    /// New `failedReason`.
    pub failed_reason: Option<String>,
    /// New `tm` (telemetry metadata).
    pub telemetry_metadata: Option<String>,
}

/// Arguments of [`Transitions::move_to_completed`].
#[derive(Debug, Clone, PartialEq)]
pub struct CompleteArgs {
    /// The worker's lock token.
    pub token: LockToken,
    /// The return value as JSON text.
    pub return_value: String,
    /// Retention of completed jobs (see [`WorkerSettings::keep_for`]).
    pub keep: KeepJobs,
    /// The moving worker's settings, sent whether or not it fetches.
    pub worker: Arc<WorkerSettings>,
    /// Take the next job in the same round trip, locked with `token` as upstream does.
    pub fetch_next: bool,
}

/// Arguments of [`Transitions::move_to_failed`].
#[derive(Debug, Clone, PartialEq)]
pub struct FailArgs {
    /// The worker's lock token.
    pub token: LockToken,
    /// The error message, stored as raw text.
    pub failed_reason: String,
    /// Retention of failed jobs (see [`WorkerSettings::keep_for`]).
    pub keep: KeepJobs,
    /// Fields to write along (the stack trace); `failedReason` is added from `failed_reason`
    /// when unset, since Node.js always sends it.
    pub fields: FieldUpdates,
    /// The moving worker's settings, sent whether or not it fetches.
    pub worker: Arc<WorkerSettings>,
    /// Take the next job in the same round trip, locked with `token` as upstream does.
    pub fetch_next: bool,
}

/// Arguments of [`Transitions::move_to_delayed`].
#[derive(Debug, Clone, PartialEq)]
pub struct DelayArgs {
    /// Now, Unix ms.
    pub timestamp: u64,
    /// How long to wait from now.
    pub delay: Duration,
    /// The worker's lock token, when moved by a worker.
    pub token: Option<LockToken>,
    /// Do not count this as an attempt (a processor's deliberate delay).
    pub skip_attempt: bool,
    /// Fields to write along.
    pub fields: FieldUpdates,
    /// The moving worker's settings; `moveToDelayed` sends them only when it fetches.
    pub worker: Arc<WorkerSettings>,
    /// Take the next job in the same round trip, locked with `token` as upstream does.
    pub fetch_next: bool,
}

/// Which counters a reprocessed job starts over with (upstream: `RetryOptions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReprocessOptions {
    /// Reset `atm`.
    pub reset_attempts_made: bool,
    /// Reset `ats`.
    pub reset_attempts_started: bool,
}

/// Arguments of the stalled-jobs sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StalledCheck {
    /// Fail a job found stalled more often than this.
    pub max_stalled_count: u32,
    /// The sweep runs at most once per interval across all workers.
    pub stalled_interval: Duration,
}

/// State transitions (upstream: `moveToActive`, `moveToCompleted`, `moveToFailed`,
/// `moveToDelayed`, `moveToWaitingChildren`, `moveJobFromActiveToWait`, `retryJob`,
/// `retryFinishedJob`, `promote`, `moveStalledJobsToWait`).
pub trait Transitions: Send + Sync {
    /// Takes the next ready job, if the queue is neither paused, maxed nor rate limited.
    fn move_to_active(&self, fetch: &FetchParams) -> impl Future<Output = Result<NextJob>> + Send;

    /// Completes an active job held with `args.token`.
    fn move_to_completed(
        &self,
        job: &Job,
        args: &CompleteArgs,
    ) -> impl Future<Output = Result<Finished>> + Send;

    /// Fails an active job held with `args.token`: for good, or to a retry when attempts remain
    /// is the caller's decision (it calls [`move_to_delayed`](Self::move_to_delayed) or
    /// [`retry_job`](Self::retry_job) instead).
    fn move_to_failed(
        &self,
        job: &Job,
        args: &FailArgs,
    ) -> impl Future<Output = Result<Finished>> + Send;

    /// Moves a job to delayed; returns the next job when `args.fetch_next` is set.
    fn move_to_delayed(
        &self,
        job_id: &JobId,
        args: &DelayArgs,
    ) -> impl Future<Output = Result<Option<NextJob>>> + Send;

    /// Parks an active parent in waiting-children; false when it has no pending children.
    fn move_to_waiting_children(
        &self,
        job_id: &JobId,
        token: &LockToken,
        child_key: Option<&str>,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Moves an active job back to wait (manual rate limit); returns the limiter's remaining
    /// time.
    fn move_job_from_active_to_wait(
        &self,
        job_id: &JobId,
        token: Option<&LockToken>,
    ) -> impl Future<Output = Result<Duration>> + Send;

    /// Retries a failed active job at once.
    fn retry_job(
        &self,
        job_id: &JobId,
        lifo: bool,
        token: Option<&LockToken>,
        fields: &FieldUpdates,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Moves a finished job back to wait (upstream: `Job#retry`).
    fn reprocess_job(
        &self,
        job: &Job,
        state: FinishedState,
        opts: ReprocessOptions,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Makes a delayed job ready now.
    fn promote(&self, job_id: &JobId) -> impl Future<Output = Result<()>> + Send;

    /// Moves active jobs whose lock expired back to wait and returns their ids. A job found
    /// stalled more than `max_stalled_count` times gets a deferred failure (`defa`) that the
    /// worker taking it applies, as upstream does.
    fn move_stalled_jobs_to_wait(
        &self,
        check: &StalledCheck,
    ) -> impl Future<Output = Result<Vec<JobId>>> + Send;
}
