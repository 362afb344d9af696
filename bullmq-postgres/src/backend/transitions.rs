//! `Transitions` for PostgreSQL: `move_to_active` (with `next_signal` when nothing was
//! taken), `move_to_completed`/`move_to_failed` (their `_fetch` variants when the worker takes
//! the next job in the same transaction, then `collect_metrics`), `move_to_delayed`,
//! `move_to_waiting_children`, `move_active_to_wait`, `retry_job`, `reprocess_job`, `promote`
//! and `move_stalled_jobs_to_wait`, with the parameters Node.js's PostgreSQL backend passes.

use std::time::Duration;

use bullmq_core::backend::{
    CompleteArgs, DelayArgs, FailArgs, FetchParams, FetchedJob, FieldUpdates, Finished, LockToken,
    NextJob, RateLimiter, ReprocessOptions, StalledCheck, Transitions, WorkerSettings,
};
use bullmq_core::job::FinishedState;
use bullmq_core::{Job, JobId, Result, ScriptError, ScriptErrorCode};
use serde_json::Value;
use sqlx::Row as _;
use sqlx::postgres::PgRow;

use super::{PostgresBackend, job_from_row, one_row, refusal, sql_error, to_i32, to_i64};
use crate::error::PostgresError;
use crate::lanes::OnLane as _;
use crate::sql::commands;

/// The lock a worker takes when its settings name none (Node.js: `lockDuration ?? 30000`).
const DEFAULT_LOCK_DURATION: Duration = Duration::from_secs(30);

/// Whole milliseconds as SQL's `bigint`.
fn millis(d: Duration) -> i64 {
    to_i64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

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

/// An answer outside what the command documents.
fn unexpected(context: &'static str, what: String) -> bullmq_core::Error {
    bullmq_core::Error::backend(PostgresError::Query {
        context,
        source: sqlx::Error::Protocol(what),
    })
}

/// A negative code a command returned (rather than raised) as upstream's error for
/// `command`, as Node.js's `finishedErrors` builds it.
fn returned_refusal(
    context: &'static str,
    code: i64,
    command: &'static str,
    job_id: &JobId,
    state: Option<&str>,
) -> bullmq_core::Error {
    match ScriptErrorCode::try_from(code) {
        Ok(code) => ScriptError {
            code,
            command,
            job_id: Some(job_id.to_string()),
            parent_key: None,
            state: state.map(str::to_owned),
        }
        .into(),
        Err(_) => unexpected(context, format!("{command} answered code {code}")),
    }
}

/// A claimed job row as the worker takes it: the id always, the job or why it cannot be read
/// (so a row another runtime wrote badly is failed with the reason, not lost).
fn fetched(context: &'static str, row: &PgRow) -> Result<FetchedJob> {
    let id: String = row.try_get("id").map_err(sql_error(context))?;
    Ok(FetchedJob {
        id: JobId::from(id),
        job: job_from_row(row),
    })
}

/// The claim parameters of a worker finishing a job: its lock duration, limiter and name.
struct Claim<'a> {
    token: &'a str,
    lock_ms: i64,
    name: Option<&'a str>,
    limiter: Option<&'a RateLimiter>,
}

impl<'a> Claim<'a> {
    fn of_worker(token: &'a str, worker: &'a WorkerSettings) -> Self {
        Self {
            token,
            lock_ms: millis(worker.lock_duration.unwrap_or(DEFAULT_LOCK_DURATION)),
            name: worker.name.as_deref(),
            limiter: worker.limiter.as_ref(),
        }
    }
}

impl PostgresBackend {
    /// The worker's answer from a claim's rows (Node.js: `buildNextJobResult`): the job, or
    /// when none was taken the rate-limit ttl, else the next delayed job's due time, both from
    /// `next_signal`.
    async fn next_job_result(
        &self,
        context: &'static str,
        rows: Vec<PgRow>,
        limiter_max: Option<i32>,
        now: i64,
    ) -> Result<NextJob> {
        if let Some(row) = rows.first() {
            return Ok(NextJob {
                job: Some(fetched(context, row)?),
                ..NextJob::default()
            });
        }
        let signals = sqlx::query(commands::NEXT_SIGNAL.text)
            .bind(self.queue_name())
            .bind(limiter_max)
            .bind(now)
            .fetch_all_on(self.lanes())
            .await
            .map_err(sql_error(context))?;
        let (ttl, next_delay) = match signals.first() {
            Some(row) => (
                row.try_get::<Option<i64>, _>("rate_limit_ttl")
                    .map_err(sql_error(context))?,
                row.try_get::<Option<i64>, _>("next_delay")
                    .map_err(sql_error(context))?,
            ),
            None => (None, None),
        };
        let positive = |v: Option<i64>| v.filter(|n| *n > 0).map(i64::unsigned_abs);
        if let Some(ttl) = positive(ttl) {
            return Ok(NextJob {
                rate_limit_ttl: Some(Duration::from_millis(ttl)),
                ..NextJob::default()
            });
        }
        Ok(NextJob {
            next_delayed_at: positive(next_delay),
            ..NextJob::default()
        })
    }

    /// Records one finished job in the per-minute metrics when the worker keeps them (Node.js:
    /// `collectMetrics` after every finish, best effort but awaited).
    async fn collect_metrics(
        &self,
        worker: &WorkerSettings,
        kind: FinishedState,
        finished_on: i64,
    ) -> Result<()> {
        // Node.js tests `maxDataPoints` for truthiness: 0 keeps no metrics.
        let Some(max) = worker.max_metrics_size.filter(|n| *n > 0) else {
            return Ok(());
        };
        sqlx::query(commands::COLLECT_METRICS.text)
            .bind(self.queue_name())
            .bind(kind.as_str())
            .bind(to_i32(u64::from(max)))
            .bind(finished_on)
            .execute_on(self.lanes())
            .await
            .map_err(sql_error("collect metrics"))?;
        Ok(())
    }

    /// `move_to_active` with explicit claim parameters, shared by the worker's fetch and
    /// `move_to_delayed`'s.
    async fn claim(&self, claim: &Claim<'_>) -> Result<NextJob> {
        const CONTEXT: &str = "move a job to active";
        let (limiter_max, limiter_duration) = limiter_params(claim.limiter);
        let now = self.now_ms();
        let rows = sqlx::query(commands::MOVE_TO_ACTIVE.text)
            .bind(self.queue_name())
            .bind(claim.token)
            .bind(claim.lock_ms)
            .bind(now)
            .bind(claim.name)
            .bind(limiter_max)
            .bind(limiter_duration)
            .fetch_all_on(self.lanes())
            .await
            .map_err(sql_error(CONTEXT))?;
        self.next_job_result(CONTEXT, rows, limiter_max, now).await
    }
}

/// Finished-on as the `u64` the core reports (the clock never reads negative).
fn finished_on(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

impl Transitions for PostgresBackend {
    async fn move_to_active(&self, fetch: &FetchParams) -> Result<NextJob> {
        self.claim(&Claim {
            token: fetch.token.as_str(),
            lock_ms: millis(fetch.lock_duration),
            name: fetch.worker_name.as_deref(),
            limiter: fetch.limiter.as_ref(),
        })
        .await
    }

    async fn move_to_completed(&self, job: &Job, args: &CompleteArgs) -> Result<Finished> {
        const CONTEXT: &str = "move a job to completed";
        let id = job.id.as_str();
        let finished = self.now_ms();
        let (remove_all, keep_age, keep_count) = super::keep_params(&args.keep);
        if args.fetch_next {
            // One transaction finishes this job and claims the next, locked with the same
            // token (upstream's fused command).
            let claim = Claim::of_worker(args.token.as_str(), &args.worker);
            let (limiter_max, limiter_duration) = limiter_params(claim.limiter);
            let rows = sqlx::query(commands::MOVE_TO_COMPLETED_FETCH.text)
                .bind(self.queue_name())
                .bind(id)
                .bind(args.token.as_str())
                .bind(args.return_value.as_str())
                .bind(finished)
                .bind(remove_all)
                .bind(keep_age)
                .bind(keep_count)
                .bind(claim.lock_ms)
                .bind(finished)
                .bind(claim.name)
                .bind(limiter_max)
                .bind(limiter_duration)
                .fetch_all_on(self.lanes())
                .await
                .map_err(refusal("moveToFinished", Some(id)))?;
            self.collect_metrics(&args.worker, FinishedState::Completed, finished)
                .await?;
            let next = self
                .next_job_result(CONTEXT, rows, limiter_max, finished)
                .await?;
            return Ok(Finished {
                next: Some(next),
                finished_on: finished_on(finished),
            });
        }
        sqlx::query(commands::MOVE_TO_COMPLETED.text)
            .bind(self.queue_name())
            .bind(id)
            .bind(args.token.as_str())
            .bind(args.return_value.as_str())
            .bind(finished)
            .bind(remove_all)
            .bind(keep_age)
            .bind(keep_count)
            .execute_on(self.lanes())
            .await
            .map_err(refusal("moveToFinished", Some(id)))?;
        self.collect_metrics(&args.worker, FinishedState::Completed, finished)
            .await?;
        Ok(Finished {
            next: None,
            finished_on: finished_on(finished),
        })
    }

    async fn move_to_failed(&self, job: &Job, args: &FailArgs) -> Result<Finished> {
        const CONTEXT: &str = "move a job to failed";
        let id = job.id.as_str();
        let finished = self.now_ms();
        let (remove_all, keep_age, keep_count) = super::keep_params(&args.keep);
        let stacktrace = stacktrace_param(&args.fields);
        if args.fetch_next {
            let claim = Claim::of_worker(args.token.as_str(), &args.worker);
            let (limiter_max, limiter_duration) = limiter_params(claim.limiter);
            let rows = sqlx::query(commands::MOVE_TO_FAILED_FETCH.text)
                .bind(self.queue_name())
                .bind(id)
                .bind(args.token.as_str())
                .bind(args.failed_reason.as_str())
                .bind(stacktrace.as_deref())
                .bind(finished)
                .bind(remove_all)
                .bind(keep_age)
                .bind(keep_count)
                .bind(claim.lock_ms)
                .bind(finished)
                .bind(claim.name)
                .bind(limiter_max)
                .bind(limiter_duration)
                .fetch_all_on(self.lanes())
                .await
                .map_err(refusal("moveToFinished", Some(id)))?;
            self.collect_metrics(&args.worker, FinishedState::Failed, finished)
                .await?;
            let next = self
                .next_job_result(CONTEXT, rows, limiter_max, finished)
                .await?;
            return Ok(Finished {
                next: Some(next),
                finished_on: finished_on(finished),
            });
        }
        sqlx::query(commands::MOVE_TO_FAILED.text)
            .bind(self.queue_name())
            .bind(id)
            .bind(args.token.as_str())
            .bind(args.failed_reason.as_str())
            .bind(stacktrace.as_deref())
            .bind(finished)
            .bind(remove_all)
            .bind(keep_age)
            .bind(keep_count)
            .execute_on(self.lanes())
            .await
            .map_err(refusal("moveToFinished", Some(id)))?;
        self.collect_metrics(&args.worker, FinishedState::Failed, finished)
            .await?;
        Ok(Finished {
            next: None,
            finished_on: finished_on(finished),
        })
    }

    async fn move_to_delayed(&self, job_id: &JobId, args: &DelayArgs) -> Result<Option<NextJob>> {
        let id = job_id.as_str();
        let delay = millis(args.delay);
        // Node.js sends a missing token as '' (which, unlike '0', does not skip the lock check).
        let token = args.token.as_ref().map_or("", LockToken::as_str);
        sqlx::query(commands::MOVE_TO_DELAYED.text)
            .bind(self.queue_name())
            .bind(id)
            .bind(token)
            .bind(to_i64(args.timestamp).saturating_add(delay))
            .bind(delay)
            .bind(args.skip_attempt)
            .bind(args.fields.failed_reason.as_deref())
            .bind(stacktrace_param(&args.fields).as_deref())
            .execute_on(self.lanes())
            .await
            .map_err(refusal("moveToDelayed", Some(id)))?;
        if !args.fetch_next {
            return Ok(None);
        }
        let Some(token) = args.token.as_ref() else {
            return Ok(Some(NextJob::default()));
        };
        let next = self
            .claim(&Claim::of_worker(token.as_str(), &args.worker))
            .await?;
        // Node.js hands back the claimed job only: a delay hint is not "next job data".
        Ok(Some(if next.job.is_some() {
            next
        } else {
            NextJob::default()
        }))
    }

    async fn move_to_waiting_children(
        &self,
        job_id: &JobId,
        token: &LockToken,
        _child_key: Option<&str>,
    ) -> Result<bool> {
        const CONTEXT: &str = "move a job to waiting-children";
        let id = job_id.as_str();
        // Upstream's function takes no child key: it parks the parent on any pending child.
        let rows = sqlx::query(commands::MOVE_TO_WAITING_CHILDREN.text)
            .bind(self.queue_name())
            .bind(id)
            .bind(token.as_str())
            .fetch_all_on(self.lanes())
            .await
            .map_err(refusal("moveToWaitingChildren", Some(id)))?;
        let code: i32 = one_row(rows, CONTEXT)?
            .try_get("code")
            .map_err(sql_error(CONTEXT))?;
        match code {
            1 => Ok(true),
            0 => Ok(false),
            code => Err(returned_refusal(
                CONTEXT,
                i64::from(code),
                "moveToWaitingChildren",
                job_id,
                Some("active"),
            )),
        }
    }

    async fn move_job_from_active_to_wait(
        &self,
        job_id: &JobId,
        token: Option<&LockToken>,
    ) -> Result<Duration> {
        const CONTEXT: &str = "move a job from active back to wait";
        let rows = sqlx::query(commands::MOVE_ACTIVE_TO_WAIT.text)
            .bind(self.queue_name())
            .bind(job_id.as_str())
            .bind(token.map_or("0", LockToken::as_str))
            .bind(self.now_ms())
            .fetch_all_on(self.lanes())
            .await
            .map_err(sql_error(CONTEXT))?;
        let n: i64 = one_row(rows, CONTEXT)?
            .try_get("n")
            .map_err(sql_error(CONTEXT))?;
        if n < 0 {
            return Err(returned_refusal(
                CONTEXT,
                n,
                "moveJobFromActiveToWait",
                job_id,
                None,
            ));
        }
        Ok(Duration::from_millis(n.unsigned_abs()))
    }

    async fn retry_job(
        &self,
        job_id: &JobId,
        lifo: bool,
        token: Option<&LockToken>,
        fields: &FieldUpdates,
    ) -> Result<()> {
        let id = job_id.as_str();
        sqlx::query(commands::RETRY_JOB.text)
            .bind(self.queue_name())
            .bind(id)
            .bind(token.map_or("", LockToken::as_str))
            .bind(lifo)
            .bind(fields.failed_reason.as_deref())
            .bind(stacktrace_param(fields).as_deref())
            .execute_on(self.lanes())
            .await
            .map_err(refusal("retryJob", Some(id)))?;
        Ok(())
    }

    async fn reprocess_job(
        &self,
        job: &Job,
        state: FinishedState,
        opts: ReprocessOptions,
    ) -> Result<()> {
        const CONTEXT: &str = "reprocess a finished job";
        let rows = sqlx::query(commands::REPROCESS_JOB.text)
            .bind(self.queue_name())
            .bind(job.id.as_str())
            .bind(state.as_str())
            .bind(job.opts.lifo.unwrap_or(false))
            .bind(opts.reset_attempts_made)
            .bind(opts.reset_attempts_started)
            .fetch_all_on(self.lanes())
            .await
            .map_err(sql_error(CONTEXT))?;
        let code: i32 = one_row(rows, CONTEXT)?
            .try_get("code")
            .map_err(sql_error(CONTEXT))?;
        if code == 1 {
            return Ok(());
        }
        Err(returned_refusal(
            CONTEXT,
            i64::from(code),
            "reprocessJob",
            &job.id,
            Some(state.as_str()),
        ))
    }

    async fn promote(&self, job_id: &JobId) -> Result<()> {
        const CONTEXT: &str = "promote a delayed job";
        let rows = sqlx::query(commands::PROMOTE.text)
            .bind(self.queue_name())
            .bind(job_id.as_str())
            .fetch_all_on(self.lanes())
            .await
            .map_err(sql_error(CONTEXT))?;
        let code: i32 = one_row(rows, CONTEXT)?
            .try_get("code")
            .map_err(sql_error(CONTEXT))?;
        if code < 0 {
            return Err(returned_refusal(
                CONTEXT,
                i64::from(code),
                "promote",
                job_id,
                Some("delayed"),
            ));
        }
        Ok(())
    }

    async fn move_stalled_jobs_to_wait(&self, check: &StalledCheck) -> Result<Vec<JobId>> {
        const CONTEXT: &str = "move stalled jobs to wait";
        let rows = sqlx::query(commands::MOVE_STALLED_JOBS_TO_WAIT.text)
            .bind(self.queue_name())
            .bind(to_i32(u64::from(check.max_stalled_count)))
            .bind(self.now_ms())
            .bind(millis(check.stalled_interval))
            .fetch_all_on(self.lanes())
            .await
            .map_err(sql_error(CONTEXT))?;
        rows.iter()
            .map(|row| {
                row.try_get::<String, _>("id")
                    .map(JobId::from)
                    .map_err(sql_error(CONTEXT))
            })
            .collect()
    }
}
