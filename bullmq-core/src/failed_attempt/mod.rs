//! What happens when a job's attempt fails, whoever reports it: a worker's processor, or a
//! caller moving the job by hand ([`JobRef::move_to_failed`](crate::JobRef::move_to_failed)).
//! Upstream's `Job#moveToFailed`: [`retry::decide`] says whether the job is retried and after
//! how long (`shouldRetryJob`), the stack is appended to the job's traces
//! (`updateStacktrace`), and [`fail_attempt`] makes the one move that follows, which counts
//! the attempt in the store.

mod failure;
pub(crate) mod retry;
mod stacktrace;

use std::sync::Arc;

use tracing::Instrument;

use crate::backend::{
    DelayArgs, FailArgs, FieldUpdates, Lifecycle, LockToken, Transitions, WorkerSettings,
};
use crate::job::FinishedState;
use crate::telemetry::{context, spans};
use crate::{Job, Queue, Result};

pub use failure::{FailOutcome, JobFailure};
pub use retry::BackoffFn;
use retry::RetryDecision;
use stacktrace::next_stacktrace;

/// Who makes the move of a failed attempt, and how.
pub(crate) struct Mover<'a> {
    /// The lock the attempt holds.
    pub(crate) token: &'a LockToken,
    /// The settings of the worker moving the job (the default for a queue's own handle).
    pub(crate) worker: Arc<WorkerSettings>,
    /// Take the next job in the same call (a delay or a failure can; a retry cannot).
    pub(crate) fetch_next: bool,
}

/// Makes the move `decision` asks for after `failure`, inside the span Node's
/// `Job#moveToFailed` opens (`delay`, `retry` or `fail`), whose context is stored in the job's
/// `tm` unless the job omits it. The job's `failedReason` and stack traces are written with
/// the move, whichever it is.
pub(crate) async fn fail_attempt<B: Transitions + Lifecycle>(
    queue: &Queue<B>,
    job: &Job,
    failure: &JobFailure,
    decision: RetryDecision,
    mover: Mover<'_>,
) -> Result<FailOutcome> {
    let span = spans::settle(queue.name().as_str(), decision.settle(), job);
    let omit = job.opts.telemetry.as_ref().and_then(|t| t.omit_context) == Some(true);
    let fields = FieldUpdates {
        stacktrace: Some(next_stacktrace(
            &job.stacktrace,
            failure.stack.as_deref(),
            job.opts.stack_trace_limit,
        )),
        failed_reason: Some(failure.message.clone()),
        telemetry_metadata: if omit {
            None
        } else {
            context::metadata_of(&span)
        },
    };
    move_failed(queue, job, failure, decision, mover, fields)
        .instrument(span)
        .await
}

/// The store's side of [`fail_attempt`].
async fn move_failed<B: Transitions + Lifecycle>(
    queue: &Queue<B>,
    job: &Job,
    failure: &JobFailure,
    decision: RetryDecision,
    Mover {
        token,
        worker,
        fetch_next,
    }: Mover<'_>,
    fields: FieldUpdates,
) -> Result<FailOutcome> {
    let backend = queue.backend();
    Ok(match decision {
        RetryDecision::After(delay) => {
            let args = DelayArgs {
                timestamp: queue.now_ms(),
                delay,
                token: Some(token.clone()),
                skip_attempt: false,
                fields,
                worker,
                fetch_next,
            };
            let next = backend.move_to_delayed(&job.id, &args).await?;
            FailOutcome::RetryDelayed { delay, next }
        }
        RetryDecision::Now => {
            let lifo = job.opts.lifo.unwrap_or(false);
            backend
                .retry_job(&job.id, lifo, Some(token), &fields)
                .await?;
            FailOutcome::Retried
        }
        RetryDecision::Fail => {
            let args = FailArgs {
                token: token.clone(),
                failed_reason: failure.message.clone(),
                keep: worker.keep_for(job, FinishedState::Failed),
                fields,
                worker,
                fetch_next,
            };
            FailOutcome::Failed(backend.move_to_failed(job, &args).await?)
        }
    })
}
