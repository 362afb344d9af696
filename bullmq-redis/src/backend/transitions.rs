//! `Transitions` for Redis: `moveToActive`, `moveToFinished`, `moveToDelayed`,
//! `moveToWaitingChildren`, `moveJobFromActiveToWait`, `retryJob`, `reprocessJob`, `promote`
//! and `moveStalledJobsToWait`: each call built in [`crate::wire`], run, and its reply read.

use std::time::Duration;

use bullmq_core::backend::{
    CompleteArgs, DelayArgs, FailArgs, FetchParams, FieldUpdates, Finished, LockToken, NextJob,
    ReprocessOptions, StalledCheck, Transitions,
};
use bullmq_core::job::FinishedState;
use bullmq_core::{Job, JobId, Result, ScriptError, ScriptErrorCode};
use redis::Value;

use super::{RedisBackend, repair};
use crate::error::{unexpected, wrap_named};
use crate::reply;
use crate::scripts;
use crate::wire::{self, FetchOpts, FinishCall};

/// Where a script refusal happened, for the error upstream would raise.
struct Refusal {
    command: &'static str,
    /// The state the job was expected in.
    state: &'static str,
}

impl Refusal {
    /// A refusal of `command`, which moves an active job.
    const fn active(command: &'static str) -> Self {
        Self {
            command,
            state: "active",
        }
    }
}

const FINISH: Refusal = Refusal::active("moveToFinished");
const DELAY: Refusal = Refusal::active("moveToDelayed");
const WAIT_CHILDREN: Refusal = Refusal::active("moveToWaitingChildren");
const BACK_TO_WAIT: Refusal = Refusal::active("moveJobFromActiveToWait");
const RETRY: Refusal = Refusal::active("retryJob");
const PROMOTE: Refusal = Refusal {
    command: "promote",
    state: "delayed",
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

/// `moveToFinished`, shared by completion and failure.
async fn finish(backend: &RedisBackend, c: &FinishCall<'_>) -> Result<Finished> {
    const CONTEXT: &str = "move a job to a finished state";
    let timestamp = backend.now_ms();
    let call = wire::move_to_finished(backend.keys(), c, timestamp)?;
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

impl Transitions for RedisBackend {
    async fn move_to_active(&self, fetch: &FetchParams) -> Result<NextJob> {
        const CONTEXT: &str = "move a job to active";
        let call = wire::move_to_active(self.keys(), self.now_ms(), &FetchOpts::of(fetch))?;
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
        let token = args.token.as_ref().map_or("0", |t| t.as_str());
        let call = wire::move_to_delayed(self.keys(), job_id, token, args)?;
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
                _ => Err(refused(CONTEXT, other, &DELAY, job_id)),
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
        let call =
            wire::move_to_waiting_children(self.keys(), job_id, token, child_key, self.now_ms());
        let reply = self
            .run(call, &scripts::MOVE_TO_WAITING_CHILDREN, CONTEXT)
            .await?;
        match reply::int(&reply) {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(refused(CONTEXT, &reply, &WAIT_CHILDREN, job_id)),
        }
    }

    async fn move_job_from_active_to_wait(
        &self,
        job_id: &JobId,
        token: Option<&LockToken>,
    ) -> Result<Duration> {
        const CONTEXT: &str = "move a job from active back to wait";
        let call = wire::move_job_from_active_to_wait(self.keys(), job_id, token);
        let reply = self
            .run(call, &scripts::MOVE_JOB_FROM_ACTIVE_TO_WAIT, CONTEXT)
            .await?;
        match reply::int(&reply) {
            Some(pttl) if pttl >= 0 => Ok(Duration::from_millis(pttl.unsigned_abs())),
            _ => Err(refused(CONTEXT, &reply, &BACK_TO_WAIT, job_id)),
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
        let call = wire::retry_job(self.keys(), job_id, lifo, token, fields, self.now_ms())?;
        let reply = self.run(call, &scripts::RETRY_JOB, CONTEXT).await?;
        match reply::int(&reply) {
            Some(0) => Ok(()),
            _ => Err(refused(CONTEXT, &reply, &RETRY, job_id)),
        }
    }

    async fn reprocess_job(
        &self,
        job: &Job,
        state: FinishedState,
        opts: ReprocessOptions,
    ) -> Result<()> {
        const CONTEXT: &str = "reprocess a finished job";
        let call = wire::reprocess_job(self.keys(), job, state, opts);
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
        let call = wire::promote(self.keys(), job_id);
        let reply = self.run(call, &scripts::PROMOTE, CONTEXT).await?;
        match reply::int(&reply) {
            Some(0) => Ok(()),
            _ => Err(refused(CONTEXT, &reply, &PROMOTE, job_id)),
        }
    }

    async fn move_stalled_jobs_to_wait(&self, check: &StalledCheck) -> Result<Vec<JobId>> {
        const CONTEXT: &str = "move stalled jobs to wait";
        // A repair that fails leaves the check to run as before; the next one tries again.
        if let Err(err) = self.repair_stalled_candidates().await {
            tracing::warn!(target: "bullmq", error = %err, "could not repair the stalled candidates");
        }
        let call = wire::move_stalled_jobs_to_wait(self.keys(), check, self.now_ms());
        let reply = self
            .run(call, &scripts::MOVE_STALLED_JOBS_TO_WAIT, CONTEXT)
            .await?;
        match &reply {
            Value::Array(_) | Value::Nil => Ok(reply::id_items(&reply)),
            other => Err(unexpected(CONTEXT, other)),
        }
    }
}
