//! The calls of the `Transitions` scripts: `moveToActive`, `moveToFinished`, `moveToDelayed`,
//! `moveToWaitingChildren`, `moveJobFromActiveToWait`, `retryJob`, `reprocessJob`, `promote`
//! and `moveStalledJobsToWait`, keys and arguments in upstream's order. Their packed options
//! are in [`super::transition_args`].

use bullmq_core::backend::{
    DelayArgs, FieldUpdates, LockToken, ReprocessOptions, StalledCheck, WorkerSettings,
};
use bullmq_core::job::FinishedState;
use bullmq_core::options::KeepJobs;
use bullmq_core::{Job, JobId, Result};

use super::transition_args::{
    FetchOpts, FinishOpts, pack_fetch_opts, pack_field_updates, pack_finish_opts,
};
use super::{flag, ms};
use crate::keys::QueueKeys;
use crate::script::ScriptCall;

/// The packed `fieldsToUpdate`, or an empty argument (what Node's `undefined` becomes).
fn fields_arg(fields: &FieldUpdates) -> Result<Vec<u8>> {
    Ok(pack_field_updates(fields)?.unwrap_or_default())
}

/// The token a script is sent for an optional lock: Node.js sends `"0"` for none.
fn token_arg(token: Option<&LockToken>) -> &str {
    token.map_or("0", LockToken::as_str)
}

/// Node.js pushes a job back with `RPUSH` when it is `lifo`, `LPUSH` otherwise.
fn push_command(lifo: bool) -> &'static str {
    if lifo { "RPUSH" } else { "LPUSH" }
}

/// The hash field a finished job's outcome is stored in.
fn outcome_field(state: FinishedState) -> &'static str {
    match state {
        FinishedState::Completed => "returnvalue",
        FinishedState::Failed => "failedReason",
    }
}

/// The first ten keys of `moveToActive`, which `moveToFinished` shares in the same order
/// because it can take the next job in the same call.
fn fetch_keys(k: &QueueKeys) -> ScriptCall {
    ScriptCall::default()
        .key(&k.wait)
        .key(&k.active)
        .key(&k.prioritized)
        .key(&k.events)
        .key(&k.stalled)
        .key(&k.limiter)
        .key(&k.delayed)
        .key(&k.paused)
        .key(&k.meta)
        .key(&k.priority_counter)
}

/// `moveToActive`: the next job taken at `now_ms` with the worker's packed `opts`.
pub(crate) fn move_to_active(
    k: &QueueKeys,
    now_ms: u64,
    opts: &FetchOpts<'_>,
) -> Result<ScriptCall> {
    Ok(fetch_keys(k)
        .key(&k.marker)
        .arg(&k.job_prefix)
        .arg(now_ms)
        .arg(pack_fetch_opts(opts)?))
}

/// What one `moveToFinished` call writes for its target set.
pub(crate) struct FinishCall<'a> {
    /// The job finished.
    pub(crate) job: &'a Job,
    /// Completed or failed.
    pub(crate) target: FinishedState,
    /// The job's lock token, which also locks the next job when one is fetched.
    pub(crate) token: &'a str,
    /// The return value (JSON) or the failure reason.
    pub(crate) value: &'a str,
    /// How many finished jobs to keep.
    pub(crate) keep: &'a KeepJobs,
    /// The finishing worker's settings.
    pub(crate) worker: &'a WorkerSettings,
    /// Whether to take the next job in the same call.
    pub(crate) fetch_next: bool,
    /// The job hash fields to write as well (a failure's reason and stack trace).
    pub(crate) fields: Option<&'a FieldUpdates>,
}

/// `moveToFinished`, shared by completion and failure: the job finished at `timestamp`.
pub(crate) fn move_to_finished(
    k: &QueueKeys,
    c: &FinishCall<'_>,
    timestamp: u64,
) -> Result<ScriptCall> {
    let opts = &c.job.opts;
    let (target_key, metrics_key) = match c.target {
        FinishedState::Completed => (&k.completed, &k.metrics_completed),
        FinishedState::Failed => (&k.failed, &k.metrics_failed),
    };
    let packed = pack_finish_opts(&FinishOpts {
        token: c.token,
        worker_name: c.worker.name.as_deref(),
        keep_jobs: c.keep,
        limiter: c.worker.limiter.as_ref(),
        lock_duration: c.worker.lock_duration,
        attempts: opts.attempts.unwrap_or(0),
        max_metrics_size: c.worker.max_metrics_size,
        fpof: opts.fail_parent_on_failure.unwrap_or(false),
        cpof: opts.continue_parent_on_failure.unwrap_or(false),
        idof: opts.ignore_dependency_on_failure.unwrap_or(false),
        rdof: opts.remove_dependency_on_failure.unwrap_or(false),
    })?;
    let fields = c.fields.map(fields_arg).transpose()?.unwrap_or_default();
    Ok(fetch_keys(k)
        .key(target_key)
        .key(k.job_key(&c.job.id, ""))
        .key(metrics_key)
        .key(&k.marker)
        .arg(c.job.id.as_bytes())
        .arg(timestamp)
        .arg(outcome_field(c.target))
        .arg(c.value)
        .arg(c.target.as_str())
        .arg(flag(c.fetch_next))
        .arg(&k.job_prefix)
        .arg(packed)
        .arg(fields))
}

/// `moveToDelayed`: the active job delayed, locked by `token` (`"0"` for none).
pub(crate) fn move_to_delayed(
    k: &QueueKeys,
    job_id: &JobId,
    token: &str,
    args: &DelayArgs,
) -> Result<ScriptCall> {
    // Node.js packs the worker's settings only when it fetches; otherwise the argument is
    // `undefined`, which reaches the script as an empty string.
    let fetch_opts = if args.fetch_next {
        pack_fetch_opts(&FetchOpts {
            token,
            lock_duration: args.worker.lock_duration,
            limiter: args.worker.limiter.as_ref(),
            worker_name: args.worker.name.as_deref(),
        })?
    } else {
        Vec::new()
    };
    Ok(ScriptCall::default()
        .key(&k.marker)
        .key(&k.active)
        .key(&k.prioritized)
        .key(&k.delayed)
        .key(k.job_key(job_id, ""))
        .key(&k.events)
        .key(&k.meta)
        .key(&k.stalled)
        .key(&k.wait)
        .key(&k.limiter)
        .key(&k.priority_counter)
        .arg(&k.job_prefix)
        .arg(args.timestamp)
        .arg(job_id.as_bytes())
        .arg(token)
        .arg(ms(args.delay))
        .arg(flag(args.skip_attempt))
        .arg(fields_arg(&args.fields)?)
        .arg(flag(args.fetch_next))
        .arg(fetch_opts))
}

/// `moveToWaitingChildren`: the active job waits for its children (for `child_key`, if
/// given) from `now_ms`.
pub(crate) fn move_to_waiting_children(
    k: &QueueKeys,
    job_id: &JobId,
    token: &LockToken,
    child_key: Option<&str>,
    now_ms: u64,
) -> ScriptCall {
    ScriptCall::default()
        .key(&k.active)
        .key(&k.waiting_children)
        .key(k.job_key(job_id, ""))
        .key(k.job_key(job_id, ":dependencies"))
        .key(k.job_key(job_id, ":unsuccessful"))
        .key(&k.stalled)
        .key(&k.events)
        .arg(token.as_str())
        .arg(child_key.unwrap_or_default())
        .arg(now_ms)
        .arg(job_id.as_bytes())
        .arg(&k.job_prefix)
}

/// `moveJobFromActiveToWait`: the active job back in wait.
pub(crate) fn move_job_from_active_to_wait(
    k: &QueueKeys,
    job_id: &JobId,
    token: Option<&LockToken>,
) -> ScriptCall {
    ScriptCall::default()
        .key(&k.active)
        .key(&k.wait)
        .key(&k.stalled)
        .key(&k.paused)
        .key(&k.meta)
        .key(&k.limiter)
        .key(&k.prioritized)
        .key(&k.marker)
        .key(&k.events)
        .arg(job_id.as_bytes())
        .arg(token_arg(token))
        .arg(k.job_key(job_id, ""))
}

/// `retryJob`: the active job back in wait at `now_ms`, at the head when `lifo`.
pub(crate) fn retry_job(
    k: &QueueKeys,
    job_id: &JobId,
    lifo: bool,
    token: Option<&LockToken>,
    fields: &FieldUpdates,
    now_ms: u64,
) -> Result<ScriptCall> {
    Ok(ScriptCall::default()
        .key(&k.active)
        .key(&k.wait)
        .key(&k.paused)
        .key(k.job_key(job_id, ""))
        .key(&k.meta)
        .key(&k.events)
        .key(&k.delayed)
        .key(&k.prioritized)
        .key(&k.priority_counter)
        .key(&k.marker)
        .key(&k.stalled)
        .arg(&k.job_prefix)
        .arg(now_ms)
        .arg(push_command(lifo))
        .arg(job_id.as_bytes())
        .arg(token_arg(token))
        .arg(fields_arg(fields)?))
}

/// `reprocessJob`: the job finished in `state` back in wait.
pub(crate) fn reprocess_job(
    k: &QueueKeys,
    job: &Job,
    state: FinishedState,
    opts: ReprocessOptions,
) -> ScriptCall {
    ScriptCall::default()
        .key(k.job_key(&job.id, ""))
        .key(&k.events)
        .key(k.to_key(state.as_str()))
        .key(&k.wait)
        .key(&k.meta)
        .key(&k.active)
        .key(&k.marker)
        .key(&k.prioritized)
        .key(&k.priority_counter)
        .arg(job.id.as_bytes())
        .arg(push_command(job.opts.lifo.unwrap_or(false)))
        .arg(outcome_field(state))
        .arg(state.as_str())
        .arg(flag(opts.reset_attempts_made))
        .arg(flag(opts.reset_attempts_started))
}

/// `promote`: the delayed job due now.
pub(crate) fn promote(k: &QueueKeys, job_id: &JobId) -> ScriptCall {
    ScriptCall::default()
        .key(&k.delayed)
        .key(&k.wait)
        .key(&k.paused)
        .key(&k.meta)
        .key(&k.prioritized)
        .key(&k.active)
        .key(&k.priority_counter)
        .key(&k.events)
        .key(&k.marker)
        .arg(&k.job_prefix)
        .arg(job_id.as_bytes())
}

/// `moveStalledJobsToWait`: the stalled check at `now_ms`.
pub(crate) fn move_stalled_jobs_to_wait(
    k: &QueueKeys,
    check: &StalledCheck,
    now_ms: u64,
) -> ScriptCall {
    ScriptCall::default()
        .key(&k.stalled)
        .key(&k.wait)
        .key(&k.active)
        .key(&k.stalled_check)
        .key(&k.meta)
        .key(&k.paused)
        .key(&k.marker)
        .key(&k.events)
        .key(&k.repeat)
        .arg(check.max_stalled_count)
        .arg(&k.job_prefix)
        .arg(now_ms)
        .arg(ms(check.stalled_interval))
}
