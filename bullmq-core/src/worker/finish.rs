//! Running one job and making the move its outcome asks for (upstream: `processJob`,
//! `handleCompleted`, `handleFailed`, `Job#moveToFailed`).

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use super::active_job::ActiveJob;
use super::cancel::CancelCell;
use super::events::WorkerEvent;
use super::processor::{JobError, ProcessResult, Processor, ReturnValue};
use super::shared::Shared;
use crate::backend::{
    Backend, CompleteArgs, DelayArgs, FetchedJob, FieldUpdates, Lifecycle, LockToken, NextJob,
};
use crate::failed_attempt::retry::{self, RetryDecision};
use crate::failed_attempt::{self, FailOutcome, JobFailure, Mover};
use crate::job::FinishedState;
use crate::telemetry::context;
use crate::telemetry::metrics::{self, Outcome};
use crate::telemetry::spans::{self, Settle};
use crate::{Error, Job, JobId, JobOptions, Result, ScriptErrorCode};
use tracing::{Instrument, Span};

/// A processor's outcome, its return value serialized.
type Processed = ProcessResult<ReturnValue>;

/// The pause before a finishing move is tried again after a failure that is not the
/// connection's (a bad reply): short, so a job is not held, but not a busy loop.
const SHORT_RETRY: Duration = Duration::from_millis(100);

/// Processes `fetched` and finishes it; returns the next job when the finishing move took one.
pub(crate) async fn process<B: Backend, P: Processor<B>>(
    shared: &Arc<Shared<B>>,
    processor: &Arc<P>,
    fetched: FetchedJob,
    token: &LockToken,
) -> Option<FetchedJob> {
    let job = match fetched.job {
        Ok(mut job) => {
            // The data as `JSON.parse` gives it to a Node.js processor (key order included),
            // which is also what Node.js copies into a scheduler's next iteration.
            if let std::borrow::Cow::Owned(view) = crate::json::js_view(&job.data) {
                job.data = view;
            }
            Arc::new(job)
        }
        Err(decode) => return fail_corrupt(shared, fetched.id, decode, token, true).await,
    };
    let span = attempt_span(shared, &job);
    let traced = spans::is_exported(&span);
    shared.health.record_ok(shared.now_ms());
    attempt(shared, processor, job, token, traced)
        .instrument(span)
        .await
}

/// The `process <queue>` span of one attempt, continuing the producer's trace (`tm`) as Node's
/// worker does: the producer's context is its parent.
fn attempt_span<B>(shared: &Shared<B>, job: &Job) -> Span {
    let span = spans::process(
        shared.queue.name().as_str(),
        job,
        shared.opts.name.as_deref(),
        shared.id(),
    );
    if let Some(tm) = job
        .opts
        .telemetry
        .as_ref()
        .and_then(|t| t.metadata.as_deref())
    {
        context::set_parent_from(&span, tm);
    }
    // The first start only: a retry or a stalled job's restart would measure from the add
    // (or first due time), adding the earlier attempts and backoffs to the wait.
    let first_start = job.attempts_made == 0 && job.attempts_started <= 1;
    if let (Some(started), true) = (job.processed_on, first_start) {
        let due = job
            .timestamp
            .saturating_add(super::shared::millis(job.delay));
        let wait = Duration::from_millis(started.saturating_sub(due));
        metrics::waited(&shared.queue_label, &job.name, wait);
    }
    // No "job started" event: the span's creation is the start, with the job's id and name.
    span
}

/// Runs `job`'s attempt and finishes it (inside its span); `traced`: the span is exported to
/// OpenTelemetry, so the outcome is an event on it too.
async fn attempt<B: Backend, P: Processor<B>>(
    shared: &Arc<Shared<B>>,
    processor: &Arc<P>,
    job: Arc<Job>,
    token: &LockToken,
    traced: bool,
) -> Option<FetchedJob> {
    // Before the job runs, as upstream does: its scheduler's next iteration is added now.
    shared.advance_scheduler(&job).await;
    if shared.observed() {
        shared.emit(WorkerEvent::Active {
            job: Arc::clone(&job),
        });
    }
    if let Some(message) = unrecoverable_message(&job, shared) {
        let outcome = Err(JobError::Unrecoverable { message });
        return finish(shared, &job, token, outcome, true, traced).await;
    }
    let cancel = shared.force.child_token();
    let reason = CancelCell::default();
    shared.locks.track(
        job.id.clone(),
        token.clone(),
        cancel.clone(),
        reason.clone(),
    );
    let active = ActiveJob::new(
        Arc::clone(&job),
        token.clone(),
        Arc::clone(shared),
        reason.clone(),
    );
    // An async block, so that a processor panicking before it returns its future is caught too.
    let outcome = match run_caught(async { processor.process(active, cancel).await }).await {
        Ok(outcome) => outcome,
        Err(payload) => {
            let message = format!("processor panicked: {}", panic_message(payload));
            Err(JobError::Failed {
                stack: Some(format!("Error: {message}")),
                message,
            })
        }
    };
    shared.locks.untrack(&job.id, token);
    if reason.lock_lost() {
        // The store holds the job for another worker now: its outcome is not this attempt's
        // to record, and the refusal of a finishing move would only say so again.
        tracing::debug!(target: "bullmq", job_id = %job.id, "lock lost: the attempt's outcome is dropped");
        spans::record_attempt_end(shared.now_ms(), None);
        return None;
    }
    finish(shared, &job, token, outcome, true, traced).await
}

/// Runs the processor's future in this task, a panic in it caught as `Err(payload)`, so that a
/// panicking processor fails its job instead of the worker. Polling it here rather than in a
/// task of its own saves a spawn, a scheduling hop and often a wake-up on another runtime
/// thread per job; the job's own task is already a task per job slot.
async fn run_caught<F: Future<Output = Processed>>(
    fut: F,
) -> std::result::Result<Processed, Box<dyn std::any::Any + Send>> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(outcome)) => Poll::Ready(Ok(outcome)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        }
    })
    .await
}

/// The text of a panic payload.
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map_or_else(|| "unknown panic payload".to_owned(), |s| (*s).to_owned()),
    }
}

/// A reason to fail the job before running it (upstream: `getUnrecoverableErrorMessage`).
fn unrecoverable_message<B>(job: &Job, shared: &Shared<B>) -> Option<String> {
    if let Some(reason) = &job.deferred_failure {
        return Some(reason.clone());
    }
    match shared.opts.max_started_attempts {
        Some(max) if max > 0 && max < job.attempts_started => {
            Some("job started more than allowable limit".to_owned())
        }
        _ => None,
    }
}

/// Fails a job that cannot be read, with a reason that says so; `may_fetch` as for
/// [`finish`].
pub(crate) async fn fail_corrupt<B: Backend>(
    shared: &Arc<Shared<B>>,
    id: JobId,
    decode: crate::job::JobDecodeError,
    token: &LockToken,
    may_fetch: bool,
) -> Option<FetchedJob> {
    let message = format!("job {id} could not be decoded and was failed: {decode}");
    shared.emit_error(Error::JobDecode(decode));
    // Only the id matters to the scripts; the job's own options could not be read.
    let mut stub = Job::new("", "{}".to_owned(), JobOptions::new(), 0);
    stub.id = id;
    finish(
        shared,
        &Arc::new(stub),
        token,
        Err(JobError::unrecoverable(message)),
        may_fetch,
        false,
    )
    .await
}

/// Makes the move `outcome` asks for; a connection failure is retried after
/// `run_retry_delay` until it goes through or the worker closes, anything else is reported.
/// With `may_fetch` (the worker's own loop, not manual processing) the move takes the next
/// job too when the worker has room; with `traced`, the outcome is an event on the attempt's
/// span too.
pub(crate) async fn finish<B: Backend>(
    shared: &Arc<Shared<B>>,
    job: &Arc<Job>,
    token: &LockToken,
    mut outcome: Processed,
    may_fetch: bool,
    traced: bool,
) -> Option<FetchedJob> {
    loop {
        if shared.force.is_cancelled() || shared.queue.backend().is_closing() {
            // Closed with force (or past the close timeout): the processor was cancelled, so
            // its outcome is not the job's; the job stays active for the stalled check.
            spans::record_attempt_end(shared.now_ms(), None);
            return None;
        }
        match finish_once(shared, job, token, &outcome, may_fetch, traced).await {
            Ok(next) => return next,
            Err(err) => {
                // As Node's `retryIfFailed`: each failure of the move on the attempt's span.
                spans::record_current_exception(&err.to_string());
                let connection = err.is_connection_failure();
                let refusal = refused_move(&outcome, &err);
                shared.emit_error(err);
                if let Some(failure) = refusal {
                    outcome = Err(failure);
                    continue;
                }
                if !connection || shared.is_closing() {
                    return None;
                }
                shared
                    .sleep(shared.opts.run_retry_delay.max(SHORT_RETRY))
                    .await;
            }
        }
    }
}

/// The failure Node records when the store refuses to complete a job, or to park it in
/// waiting-children: there the refusal is thrown (by `moveToCompleted`, or by
/// `moveToWaitingChildren` inside the processor) and the worker fails the job with it; a job
/// with a failed child fails for good, as upstream throws an `UnrecoverableError` for it.
/// Left alone, the job would stay active until the stalled check, only to be refused again.
fn refused_move(outcome: &Processed, err: &Error) -> Option<JobError> {
    match (outcome, err) {
        (Ok(_) | Err(JobError::WaitingChildren), Error::Script(e)) => {
            let message = e.to_string();
            Some(if e.code == ScriptErrorCode::FailedChildren {
                JobError::Unrecoverable { message }
            } else {
                JobError::failed(message)
            })
        }
        _ => None,
    }
}

async fn finish_once<B: Backend>(
    shared: &Arc<Shared<B>>,
    job: &Arc<Job>,
    token: &LockToken,
    outcome: &Processed,
    may_fetch: bool,
    traced: bool,
) -> Result<Option<FetchedJob>> {
    let backend = shared.queue.backend();
    let fetch_next = may_fetch && shared.may_fetch_next();
    match outcome {
        Ok(value) => {
            let return_value = value.as_str().to_owned();
            let args = CompleteArgs {
                token: token.clone(),
                keep: shared.settings.keep_for(job, FinishedState::Completed),
                return_value,
                worker: Arc::clone(&shared.settings),
                fetch_next,
            };
            // Timed by its creation and drop, not entered around the round trip (as `add`).
            let settle = settle_span(shared, job, Settle::Complete);
            let done = backend.move_to_completed(job, &args).await?;
            drop(settle);
            attempt_ended(
                shared,
                job,
                Outcome::Completed,
                Some(job.attempts_made.saturating_add(1)),
            );
            if traced {
                spans::record_completed(&args.return_value);
            }
            if shared.observed() {
                shared.emit(WorkerEvent::Completed {
                    job: Arc::clone(job),
                    return_value: args.return_value,
                });
            }
            Ok(next_of(shared, done.next))
        }
        Err(JobError::Failed { message, stack }) => {
            let failure = JobFailure {
                message: message.clone(),
                stack: stack.clone(),
                unrecoverable: false,
            };
            fail(shared, job, token, failure, FailMove { fetch_next, traced }).await
        }
        Err(JobError::Unrecoverable { message }) => {
            let failure = JobFailure {
                stack: Some(format!("UnrecoverableError: {message}")),
                message: message.clone(),
                unrecoverable: true,
            };
            fail(shared, job, token, failure, FailMove { fetch_next, traced }).await
        }
        Err(JobError::Delay { until }) => {
            let now = shared.now_ms();
            let args = DelayArgs {
                timestamp: now,
                delay: Duration::from_millis(until.saturating_sub(now)),
                token: Some(token.clone()),
                skip_attempt: true,
                fields: FieldUpdates::default(),
                worker: Arc::clone(&shared.settings),
                fetch_next,
            };
            let next = backend.move_to_delayed(&job.id, &args).await?;
            attempt_ended(shared, job, Outcome::Delayed, None);
            Ok(next_of(shared, next))
        }
        Err(JobError::RateLimited { delay }) => {
            // Node's processor calls `worker.rateLimit(ms)`: that span, inside the attempt's.
            let limit = spans::worker::rate_limit(
                shared.queue.name().as_str(),
                shared.id(),
                super::shared::millis(*delay),
            );
            metrics::rate_limited(shared.queue.name().as_str(), *delay);
            backend.set_rate_limit(*delay).instrument(limit).await?;
            let ttl = backend
                .move_job_from_active_to_wait(&job.id, Some(token))
                .await?;
            shared.update_delays(&NextJob {
                rate_limit_ttl: Some(ttl),
                ..NextJob::default()
            });
            spans::record_attempt_end(shared.now_ms(), None);
            Ok(None)
        }
        Err(JobError::BackToWait) => {
            backend
                .move_job_from_active_to_wait(&job.id, Some(token))
                .await?;
            spans::record_attempt_end(shared.now_ms(), None);
            fetch_after_move(shared, token, fetch_next).await
        }
        Err(JobError::WaitingChildren) => {
            let parked = backend
                .move_to_waiting_children(&job.id, token, None)
                .await?;
            if !parked {
                backend
                    .move_job_from_active_to_wait(&job.id, Some(token))
                    .await?;
            }
            spans::record_attempt_end(shared.now_ms(), None);
            fetch_after_move(shared, token, fetch_next).await
        }
    }
}

/// After a move that cannot fetch by itself, takes the next job as upstream does.
async fn fetch_after_move<B: Backend>(
    shared: &Arc<Shared<B>>,
    token: &LockToken,
    fetch_next: bool,
) -> Result<Option<FetchedJob>> {
    if fetch_next {
        shared.move_to_active(token).await
    } else {
        Ok(None)
    }
}

fn next_of<B: Backend>(shared: &Shared<B>, next: Option<NextJob>) -> Option<FetchedJob> {
    next.and_then(|n| shared.take(n))
}

/// What a failed attempt's move does besides: take the next job, add the `job failed` event.
#[derive(Debug, Clone, Copy)]
struct FailMove {
    fetch_next: bool,
    traced: bool,
}

/// A failed attempt, as `Job#moveToFailed` handles it (see [`failed_attempt`]): retried
/// after its backoff, at once, or failed for good; then the attempt's metrics, span events and
/// `failed` event, which are the worker's own.
async fn fail<B: Backend>(
    shared: &Arc<Shared<B>>,
    job: &Arc<Job>,
    token: &LockToken,
    failure: JobFailure,
    FailMove { fetch_next, traced }: FailMove,
) -> Result<Option<FetchedJob>> {
    let decision = retry::decide(job, &failure.message, failure.unrecoverable, &shared.retry)
        .unwrap_or_else(|unknown| {
            let outcome = format!("job {} failed without retry", job.id);
            shared.emit_error(unknown.refusal(&outcome).into());
            RetryDecision::Fail
        });
    let mover = Mover {
        token,
        worker: Arc::clone(&shared.settings),
        fetch_next,
    };
    let moved = failed_attempt::fail_attempt(&shared.queue, job, &failure, decision, mover).await?;
    let (outcome, next, retried) = match moved {
        FailOutcome::RetryDelayed { next, .. } => (Outcome::Delayed, next, true),
        FailOutcome::Retried => (Outcome::Retried, None, true),
        FailOutcome::Failed(finished) => (Outcome::Failed, finished.next, false),
    };
    attempt_ended(
        shared,
        job,
        outcome,
        Some(job.attempts_made.saturating_add(1)),
    );
    let JobFailure {
        message,
        stack,
        unrecoverable,
    } = failure;
    if traced {
        // Node 6.7.6 records the error on the attempt's span before its `job failed` event.
        let kind = if unrecoverable {
            "UnrecoverableError"
        } else {
            "Error"
        };
        spans::record_attempt_exception(kind, &message, stack.as_deref().unwrap_or_default());
        spans::record_failed(&message);
    }
    if shared.observed() {
        shared.emit(WorkerEvent::Failed {
            job: Arc::clone(job),
            reason: message,
            retried,
        });
    }
    Ok(next_of(shared, next))
}

/// The span of an attempt's finishing move.
fn settle_span<B>(shared: &Shared<B>, job: &Job, how: Settle) -> Span {
    spans::settle(shared.queue.name().as_str(), how, job)
}

/// Records how an attempt ended: its metrics, and on the attempt's span (the current one) its
/// end and, for a completed or failed attempt, `attempts_made` (the span's event is the
/// caller's: Node's worker adds one for a completed or failed attempt only).
fn attempt_ended<B: Lifecycle>(
    shared: &Shared<B>,
    job: &Job,
    outcome: Outcome,
    attempts_made: Option<u32>,
) {
    let now = shared.now_ms();
    shared.health.record_ok(now);
    let duration = Duration::from_millis(job.processed_on.map_or(0, |s| now.saturating_sub(s)));
    metrics::attempt(&shared.queue_label, &job.name, outcome, duration);
    spans::record_attempt_end(now, attempts_made);
}
