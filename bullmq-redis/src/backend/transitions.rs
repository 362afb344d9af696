//! `Transitions` for Redis: `moveToActive`, `moveToFinished`, `moveToDelayed`,
//! `moveToWaitingChildren`, `moveJobFromActiveToWait`, `retryJob`, `reprocessJob`, `promote`
//! and `moveStalledJobsToWait`, with KEYS and ARGV exactly as Node.js passes them.

use std::time::Duration;

use bullmq_core::backend::{
    CompleteArgs, DelayArgs, FailArgs, FetchParams, FieldUpdates, Finished, LockToken, NextJob,
    ReprocessOptions, StalledCheck, Transitions, WorkerSettings,
};
use bullmq_core::job::FinishedState;
use bullmq_core::options::KeepJobs;
use bullmq_core::{Job, JobId, Result, ScriptError, ScriptErrorCode};
use redis::Value;

use super::{RedisBackend, repair};
use crate::error::{unexpected, wrap_named};
use crate::keys::QueueKeys;
use crate::reply;
use crate::script::ScriptCall;
use crate::scripts;
use crate::wire::{self, FetchOpts, FinishOpts};

/// Where a script refusal happened, for the error upstream would raise.
struct Refusal {
    command: &'static str,
    /// The state the job was expected in.
    state: &'static str,
}

const FINISH: Refusal = Refusal {
    command: "moveToFinished",
    state: "active",
};

/// A negative script code as upstream's error; any other code is a reply we do not know.
fn refused(
    context: &'static str,
    reply: &Value,
    at: &Refusal,
    job_id: &JobId,
) -> bullmq_core::Error {
    match reply::int(reply).map(ScriptErrorCode::try_from) {
        Some(Ok(code)) => ScriptError {
            code,
            command: at.command,
            job_id: Some(job_id.to_string()),
            parent_key: None,
            state: Some(at.state.to_owned()),
        }
        .into(),
        _ => unexpected(context, reply),
    }
}

/// Whole milliseconds, as Node passes durations to the scripts.
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Node passes booleans to the scripts as `"1"`/`"0"`.
fn flag(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

/// The packed `fieldsToUpdate`, or an empty argument (what Node's `undefined` becomes).
fn fields_arg(fields: &FieldUpdates) -> Result<Vec<u8>> {
    Ok(wire::pack_field_updates(fields)?.unwrap_or_default())
}

/// What one `moveToFinished` call writes for its target set.
struct FinishCall<'a> {
    job: &'a Job,
    target: FinishedState,
    token: &'a str,
    value: &'a str,
    keep: &'a KeepJobs,
    worker: &'a WorkerSettings,
    fetch_next: bool,
    fields: Option<&'a FieldUpdates>,
}

/// `moveToFinished`, shared by completion and failure.
async fn finish(backend: &RedisBackend, c: &FinishCall<'_>) -> Result<Finished> {
    const CONTEXT: &str = "move a job to a finished state";
    let k = backend.keys();
    let opts = &c.job.opts;
    let (target_key, metrics_key, prop) = match c.target {
        FinishedState::Completed => (&k.completed, &k.metrics_completed, "returnvalue"),
        FinishedState::Failed => (&k.failed, &k.metrics_failed, "failedReason"),
    };
    let packed = wire::pack_finish_opts(&FinishOpts {
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
    let timestamp = backend.now_ms();
    let call = fetch_keys(k)
        .key(target_key)
        .key(k.job_key(&c.job.id, ""))
        .key(metrics_key)
        .key(&k.marker)
        .arg(c.job.id.as_bytes())
        .arg(timestamp)
        .arg(prop)
        .arg(c.value)
        .arg(c.target.as_str())
        .arg(flag(c.fetch_next))
        .arg(&k.job_prefix)
        .arg(packed)
        .arg(fields);
    let reply = match backend.replica_wait() {
        None => match backend.run(call, &scripts::MOVE_TO_FINISHED, CONTEXT).await {
            Ok(reply) => reply,
            // The job itself was repaired when it was fetched: what failed is the fetch of the
            // next one, after this job was finished.
            Err(err) if c.fetch_next && repair::is_not_a_count(&err) => {
                let next = backend.recover_fetch(c.token).await?.ok_or(err)?;
                return Ok(Finished {
                    next: Some(next),
                    finished_on: timestamp,
                });
            }
            Err(err) => return Err(err),
        },
        Some(wait) => {
            let (reply, acked) = call
                .invoke_then_wait(&backend.connection(), &scripts::MOVE_TO_FINISHED, wait)
                .await
                .map_err(|e| {
                    let command = format!("EVALSHA {}", scripts::MOVE_TO_FINISHED.name);
                    wrap_named(CONTEXT, Some(command), call.first_key())(e)
                })?;
            if crate::replication::short_of(wait, acked) {
                // The job is finished; should a failover lose that, it runs again, as it
                // would without the wait. Failing the call would have it run again always.
                tracing::warn!(
                    job = c.job.id.as_str(),
                    confirmed = acked,
                    asked = wait.replicas,
                    "redis: a finished job was not confirmed by the replicas in time; a \
                     failover now could have it run again"
                );
            }
            reply
        }
    };
    let next = match &reply {
        Value::Array(_) => Some(backend.settle_fetch(CONTEXT, &reply, c.token).await?),
        other => match reply::int(other) {
            Some(0) => c.fetch_next.then(NextJob::default),
            _ => return Err(refused(CONTEXT, other, &FINISH, &c.job.id)),
        },
    };
    Ok(Finished {
        next,
        finished_on: timestamp,
    })
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

impl Transitions for RedisBackend {
    async fn move_to_active(&self, fetch: &FetchParams) -> Result<NextJob> {
        const CONTEXT: &str = "move a job to active";
        let k = self.keys();
        let call = fetch_keys(k)
            .key(&k.marker)
            .arg(&k.job_prefix)
            .arg(self.now_ms())
            .arg(wire::pack_fetch_opts(&FetchOpts::of(fetch))?);
        let token = fetch.token.as_str();
        match self.run(call, &scripts::MOVE_TO_ACTIVE, CONTEXT).await {
            Ok(reply) => self.settle_fetch(CONTEXT, &reply, token).await,
            // The script took a job and failed counting its start (`ats` is not a count):
            // finish the fetch here, or the job would sit in active until it stalls, forever.
            Err(err) if repair::is_not_a_count(&err) => self.recover_fetch(token).await?.ok_or(err),
            Err(err) => Err(err),
        }
    }

    async fn move_to_completed(&self, job: &Job, args: &CompleteArgs) -> Result<Finished> {
        finish(
            self,
            &FinishCall {
                job,
                target: FinishedState::Completed,
                token: args.token.as_str(),
                value: &args.return_value,
                keep: &args.keep,
                worker: &args.worker,
                fetch_next: args.fetch_next,
                fields: None,
            },
        )
        .await
    }

    async fn move_to_failed(&self, job: &Job, args: &FailArgs) -> Result<Finished> {
        let fields = FieldUpdates {
            failed_reason: args
                .fields
                .failed_reason
                .clone()
                .or_else(|| Some(args.failed_reason.clone())),
            ..args.fields.clone()
        };
        finish(
            self,
            &FinishCall {
                job,
                target: FinishedState::Failed,
                token: args.token.as_str(),
                value: &args.failed_reason,
                keep: &args.keep,
                worker: &args.worker,
                fetch_next: args.fetch_next,
                fields: Some(&fields),
            },
        )
        .await
    }

    async fn move_to_delayed(&self, job_id: &JobId, args: &DelayArgs) -> Result<Option<NextJob>> {
        const CONTEXT: &str = "move a job to delayed";
        let k = self.keys();
        let token = args.token.as_ref().map_or("0", |t| t.as_str());
        // Node.js packs the worker's settings only when it fetches; otherwise the argument is
        // `undefined`, which reaches the script as an empty string.
        let fetch_opts = if args.fetch_next {
            wire::pack_fetch_opts(&FetchOpts {
                token,
                lock_duration: args.worker.lock_duration,
                limiter: args.worker.limiter.as_ref(),
                worker_name: args.worker.name.as_deref(),
            })?
        } else {
            Vec::new()
        };
        let call = ScriptCall::default()
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
            .arg(fetch_opts);
        let reply = match self.run(call, &scripts::MOVE_TO_DELAYED, CONTEXT).await {
            Ok(reply) => reply,
            Err(err) if args.fetch_next && repair::is_not_a_count(&err) => {
                return Ok(Some(self.recover_fetch(token).await?.ok_or(err)?));
            }
            Err(err) => return Err(err),
        };
        match &reply {
            Value::Array(_) => Ok(Some(self.settle_fetch(CONTEXT, &reply, token).await?)),
            other => match reply::int(other) {
                Some(0) => Ok(args.fetch_next.then(NextJob::default)),
                _ => Err(refused(
                    CONTEXT,
                    other,
                    &Refusal {
                        command: "moveToDelayed",
                        state: "active",
                    },
                    job_id,
                )),
            },
        }
    }

    async fn move_to_waiting_children(
        &self,
        job_id: &JobId,
        token: &LockToken,
        child_key: Option<&str>,
    ) -> Result<bool> {
        const CONTEXT: &str = "move a job to waiting-children";
        let k = self.keys();
        let call = ScriptCall::default()
            .key(&k.active)
            .key(&k.waiting_children)
            .key(k.job_key(job_id, ""))
            .key(k.job_key(job_id, ":dependencies"))
            .key(k.job_key(job_id, ":unsuccessful"))
            .key(&k.stalled)
            .key(&k.events)
            .arg(token.as_str())
            .arg(child_key.unwrap_or_default())
            .arg(self.now_ms())
            .arg(job_id.as_bytes())
            .arg(&k.job_prefix);
        let reply = self
            .run(call, &scripts::MOVE_TO_WAITING_CHILDREN, CONTEXT)
            .await?;
        match reply::int(&reply) {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(refused(
                CONTEXT,
                &reply,
                &Refusal {
                    command: "moveToWaitingChildren",
                    state: "active",
                },
                job_id,
            )),
        }
    }

    async fn move_job_from_active_to_wait(
        &self,
        job_id: &JobId,
        token: Option<&LockToken>,
    ) -> Result<Duration> {
        const CONTEXT: &str = "move a job from active back to wait";
        let k = self.keys();
        let call = ScriptCall::default()
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
            .arg(token.map_or("0", |t| t.as_str()))
            .arg(k.job_key(job_id, ""));
        let reply = self
            .run(call, &scripts::MOVE_JOB_FROM_ACTIVE_TO_WAIT, CONTEXT)
            .await?;
        match reply::int(&reply) {
            Some(pttl) if pttl >= 0 => Ok(Duration::from_millis(pttl.unsigned_abs())),
            _ => Err(refused(
                CONTEXT,
                &reply,
                &Refusal {
                    command: "moveJobFromActiveToWait",
                    state: "active",
                },
                job_id,
            )),
        }
    }

    async fn retry_job(
        &self,
        job_id: &JobId,
        lifo: bool,
        token: Option<&LockToken>,
        fields: &FieldUpdates,
    ) -> Result<()> {
        const CONTEXT: &str = "retry a job";
        let k = self.keys();
        let call = ScriptCall::default()
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
            .arg(self.now_ms())
            .arg(if lifo { "RPUSH" } else { "LPUSH" })
            .arg(job_id.as_bytes())
            .arg(token.map_or("0", |t| t.as_str()))
            .arg(fields_arg(fields)?);
        let reply = self.run(call, &scripts::RETRY_JOB, CONTEXT).await?;
        match reply::int(&reply) {
            Some(0) => Ok(()),
            _ => Err(refused(
                CONTEXT,
                &reply,
                &Refusal {
                    command: "retryJob",
                    state: "active",
                },
                job_id,
            )),
        }
    }

    async fn reprocess_job(
        &self,
        job: &Job,
        state: FinishedState,
        opts: ReprocessOptions,
    ) -> Result<()> {
        const CONTEXT: &str = "reprocess a finished job";
        let k = self.keys();
        let id = job.id.as_bytes();
        let prop = match state {
            FinishedState::Completed => "returnvalue",
            FinishedState::Failed => "failedReason",
        };
        let push = if job.opts.lifo.unwrap_or(false) {
            "RPUSH"
        } else {
            "LPUSH"
        };
        let call = ScriptCall::default()
            .key(k.job_key(&job.id, ""))
            .key(&k.events)
            .key(k.to_key(state.as_str()))
            .key(&k.wait)
            .key(&k.meta)
            .key(&k.active)
            .key(&k.marker)
            .key(&k.prioritized)
            .key(&k.priority_counter)
            .arg(id)
            .arg(push)
            .arg(prop)
            .arg(state.as_str())
            .arg(flag(opts.reset_attempts_made))
            .arg(flag(opts.reset_attempts_started));
        let reply = self.run(call, &scripts::REPROCESS_JOB, CONTEXT).await?;
        match reply::int(&reply) {
            Some(1) => Ok(()),
            _ => Err(refused(
                CONTEXT,
                &reply,
                &Refusal {
                    command: "reprocessJob",
                    state: state.as_str(),
                },
                &job.id,
            )),
        }
    }

    async fn promote(&self, job_id: &JobId) -> Result<()> {
        const CONTEXT: &str = "promote a delayed job";
        let k = self.keys();
        let call = ScriptCall::default()
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
            .arg(job_id.as_bytes());
        let reply = self.run(call, &scripts::PROMOTE, CONTEXT).await?;
        match reply::int(&reply) {
            Some(0) => Ok(()),
            _ => Err(refused(
                CONTEXT,
                &reply,
                &Refusal {
                    command: "promote",
                    state: "delayed",
                },
                job_id,
            )),
        }
    }

    async fn move_stalled_jobs_to_wait(&self, check: &StalledCheck) -> Result<Vec<JobId>> {
        const CONTEXT: &str = "move stalled jobs to wait";
        // A repair that fails leaves the check to run as before; the next one tries again.
        if let Err(err) = self.repair_stalled_candidates().await {
            tracing::warn!(target: "bullmq", error = %err, "could not repair the stalled candidates");
        }
        let k = self.keys();
        let call = ScriptCall::default()
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
            .arg(self.now_ms())
            .arg(ms(check.stalled_interval));
        let reply = self
            .run(call, &scripts::MOVE_STALLED_JOBS_TO_WAIT, CONTEXT)
            .await?;
        match &reply {
            Value::Array(_) | Value::Nil => Ok(reply::id_items(&reply)),
            other => Err(unexpected(CONTEXT, other)),
        }
    }
}
