//! The parameters of the `Transitions` commands, as Node.js's PostgreSQL backend passes them:
//! the claim every command that hands a worker a job takes last, the finishing arguments
//! (return value or failure, retention), the delay and retry arguments.

use std::time::Duration;

use bullmq_core::Job;
use bullmq_core::backend::{
    CompleteArgs, DelayArgs, FailArgs, FetchParams, FieldUpdates, LockToken, RateLimiter,
    ReprocessOptions, StalledCheck, WorkerSettings,
};
use bullmq_core::job::FinishedState;
use bullmq_core::options::KeepJobs;
use serde_json::Value;

use super::{JobAt, millis, queued, to_i32, to_i64};
use crate::connection::Query;
use crate::sql::commands;

/// The lock a worker takes when its settings name none (Node.js: `lockDuration ?? 30000`).
const DEFAULT_LOCK_DURATION: Duration = Duration::from_secs(30);

/// The limiter parameters (`limiter max` as `integer`, `duration` as `bigint` ms) every
/// claiming command takes; `NULL`s without a limiter.
fn limiter_params(limiter: Option<&RateLimiter>) -> (Option<i32>, Option<i64>) {
    (
        limiter.map(|l| to_i32(l.max)),
        limiter.map(|l| millis(l.duration)),
    )
}

/// The stack traces as the JSON text the commands cast to `jsonb` (Node.js sends
/// `fieldsToUpdate.stacktrace`, a JSON string, or `null`).
fn stacktrace_param(fields: &FieldUpdates) -> Option<String> {
    fields
        .stacktrace
        .as_ref()
        .map(|frames| Value::from(frames.clone()).to_string())
}

/// The retention parameters upstream's finishing functions take (`remove_all`, `keep_age`
/// in seconds, `keep_count`), as Node.js's `normalizeKeep` builds them.
fn keep_params(keep: &KeepJobs) -> (bool, Option<i64>, Option<i32>) {
    match keep {
        KeepJobs::RemoveAll => (true, None, None),
        KeepJobs::KeepAll => (false, None, None),
        KeepJobs::Number(count) => (false, None, Some(to_i32(*count))),
        KeepJobs::Policy { age, count, .. } => {
            (false, age.map(|a| to_i64(a.as_secs())), count.map(to_i32))
        }
    }
}

/// The claim parameters of a worker taking a job: its token, lock duration, name and
/// limiter.
pub(crate) struct Claim<'a> {
    token: &'a str,
    lock_ms: i64,
    name: Option<&'a str>,
    limiter: Option<&'a RateLimiter>,
}

impl<'a> Claim<'a> {
    /// The claim of a worker's fetch.
    pub(crate) fn of_fetch(fetch: &'a FetchParams) -> Self {
        Self {
            token: fetch.token.as_str(),
            lock_ms: millis(fetch.lock_duration),
            name: fetch.worker_name.as_deref(),
            limiter: fetch.limiter.as_ref(),
        }
    }

    /// The claim of a worker that takes its next job with `token` (finishing or delaying
    /// one), with its settings' lock duration, name and limiter.
    pub(crate) fn of_worker(token: &'a str, worker: &'a WorkerSettings) -> Self {
        Self {
            token,
            lock_ms: millis(worker.lock_duration.unwrap_or(DEFAULT_LOCK_DURATION)),
            name: worker.name.as_deref(),
            limiter: worker.limiter.as_ref(),
        }
    }

    /// The limiter max the claim sends, which `next_signal` takes too.
    pub(crate) fn limiter_max(&self) -> Option<i32> {
        limiter_params(self.limiter).0
    }

    /// Binds the claim's parameters, which every claiming command takes last (lock duration,
    /// now, worker name, limiter max and duration).
    fn bind<'q>(&self, query: Query<'q>, now: i64) -> Query<'q>
    where
        'a: 'q,
    {
        let (limiter_max, limiter_duration) = limiter_params(self.limiter);
        query
            .bind(self.lock_ms)
            .bind(now)
            .bind(self.name)
            .bind(limiter_max)
            .bind(limiter_duration)
    }
}

/// A job a worker finished, with the arguments of its outcome.
#[derive(Clone, Copy)]
pub(crate) enum Finishing<'a> {
    Completed(&'a CompleteArgs),
    Failed(&'a FailArgs),
}

impl<'a> Finishing<'a> {
    /// What both outcomes send: the worker's token, retention and settings, and whether it
    /// takes the next job.
    pub(crate) fn shared(self) -> (&'a LockToken, &'a KeepJobs, &'a WorkerSettings, bool) {
        match self {
            Self::Completed(a) => (&a.token, &a.keep, &a.worker, a.fetch_next),
            Self::Failed(a) => (&a.token, &a.keep, &a.worker, a.fetch_next),
        }
    }
}

/// `move_to_active(queue, token, <claim>)`.
pub(crate) fn move_to_active<'q>(queue: &'q str, claim: &Claim<'q>, now: i64) -> Query<'q> {
    let query = queued(commands::MOVE_TO_ACTIVE, queue).bind(claim.token);
    claim.bind(query, now)
}

/// `next_signal(queue, limiter max, now)`: why a claim took nothing.
pub(crate) fn next_signal(queue: &str, limiter_max: Option<i32>, now: i64) -> Query<'_> {
    queued(commands::NEXT_SIGNAL, queue)
        .bind(limiter_max)
        .bind(now)
}

/// `move_to_completed` / `move_to_failed` (their `_fetch` variant, with the worker's claim,
/// when it takes the next job): `(queue, id, token, <return value | reason, stack traces>,
/// finished at, remove all, keep age, keep count[, <claim>])`.
pub(crate) fn move_to_finished<'q>(
    job: JobAt<'q>,
    finishing: Finishing<'q>,
    finished: i64,
) -> Query<'q> {
    let (token, keep, worker, fetch_next) = finishing.shared();
    let (plain, fused) = match finishing {
        Finishing::Completed(_) => (
            commands::MOVE_TO_COMPLETED,
            commands::MOVE_TO_COMPLETED_FETCH,
        ),
        Finishing::Failed(_) => (commands::MOVE_TO_FAILED, commands::MOVE_TO_FAILED_FETCH),
    };
    let command = if fetch_next { fused } else { plain };
    let (remove_all, keep_age, keep_count) = keep_params(keep);
    let query = job.keyed(command).bind(token.as_str());
    let query = match finishing {
        Finishing::Completed(a) => query.bind(a.return_value.as_str()),
        Finishing::Failed(a) => query
            .bind(a.failed_reason.as_str())
            .bind(stacktrace_param(&a.fields)),
    };
    let query = query
        .bind(finished)
        .bind(remove_all)
        .bind(keep_age)
        .bind(keep_count);
    if fetch_next {
        // One transaction finishes this job and claims the next, locked with the same token
        // (upstream's fused command).
        Claim::of_worker(token.as_str(), worker).bind(query, finished)
    } else {
        query
    }
}

/// `collect_metrics(queue, kind, max data points, finished at)`, or none when `worker` keeps
/// no metrics: Node.js tests `maxDataPoints` for truthiness, so 0 keeps none either.
pub(crate) fn collect_metrics<'q>(
    queue: &'q str,
    worker: &WorkerSettings,
    kind: FinishedState,
    finished_on: i64,
) -> Option<Query<'q>> {
    let max = worker.max_metrics_size.filter(|n| *n > 0)?;
    Some(
        queued(commands::COLLECT_METRICS, queue)
            .bind(kind.as_str())
            .bind(to_i32(u64::from(max)))
            .bind(finished_on),
    )
}

/// `move_to_waiting_children(queue, id, token)`: upstream's function takes no child key.
pub(crate) fn move_to_waiting_children<'q>(job: JobAt<'q>, token: &'q LockToken) -> Query<'q> {
    job.keyed(commands::MOVE_TO_WAITING_CHILDREN)
        .bind(token.as_str())
}

/// `move_active_to_wait(queue, id, token, now)`; a missing token is sent as `'0'`, which
/// skips the lock check.
pub(crate) fn move_active_to_wait<'q>(
    job: JobAt<'q>,
    token: Option<&'q LockToken>,
    now: i64,
) -> Query<'q> {
    job.keyed(commands::MOVE_ACTIVE_TO_WAIT)
        .bind(token.map_or("0", LockToken::as_str))
        .bind(now)
}

/// `reprocess_job(queue, id, state, lifo, reset attempts made, reset attempts started)`.
pub(crate) fn reprocess_job<'q>(
    at: JobAt<'q>,
    job: &Job,
    state: FinishedState,
    opts: ReprocessOptions,
) -> Query<'q> {
    at.keyed(commands::REPROCESS_JOB)
        .bind(state.as_str())
        .bind(job.opts.lifo.unwrap_or(false))
        .bind(opts.reset_attempts_made)
        .bind(opts.reset_attempts_started)
}

/// `move_stalled_jobs_to_wait(queue, max stalled count, now, stalled interval ms)`.
pub(crate) fn move_stalled_jobs_to_wait<'q>(
    queue: &'q str,
    check: &StalledCheck,
    now: i64,
) -> Query<'q> {
    queued(commands::MOVE_STALLED_JOBS_TO_WAIT, queue)
        .bind(to_i32(u64::from(check.max_stalled_count)))
        .bind(now)
        .bind(millis(check.stalled_interval))
}

/// `move_to_delayed(queue, id, token, delayed until, delay, skip attempt, reason, stack
/// traces)`; a missing token is sent as `''` as Node.js sends it (which, unlike `'0'`, does
/// not skip the lock check).
pub(crate) fn delay_job<'q>(job: JobAt<'q>, args: &'q DelayArgs) -> Query<'q> {
    let delay = millis(args.delay);
    let token = args.token.as_ref().map_or("", LockToken::as_str);
    job.keyed(commands::MOVE_TO_DELAYED)
        .bind(token)
        .bind(to_i64(args.timestamp).saturating_add(delay))
        .bind(delay)
        .bind(args.skip_attempt)
        .bind(args.fields.failed_reason.as_deref())
        .bind(stacktrace_param(&args.fields))
}

/// `retry_job(queue, id, token, lifo, reason, stack traces)`; a missing token is sent as
/// `''`.
pub(crate) fn retry_job<'q>(
    job: JobAt<'q>,
    lifo: bool,
    token: Option<&'q LockToken>,
    fields: &'q FieldUpdates,
) -> Query<'q> {
    job.keyed(commands::RETRY_JOB)
        .bind(token.map_or("", LockToken::as_str))
        .bind(lifo)
        .bind(fields.failed_reason.as_deref())
        .bind(stacktrace_param(fields))
}
