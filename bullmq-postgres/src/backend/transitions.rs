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
use bullmq_core::options::KeepJobs;
use bullmq_core::{Job, JobId, Result};
use serde_json::Value;
use sqlx::Row as _;
use sqlx::postgres::PgRow;

use super::{
    PostgresBackend, answered_refusal, id_column, job_from_row, millis, one_value, refusal,
    sql_error, to_i32, to_i64, unexpected,
};
use crate::lanes::{OnLane as _, Query};
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

/// A negative code a command returned (rather than raised) as upstream's error for
/// `command`, as Node.js's `finishedErrors` builds it.
fn returned_refusal(
    context: &'static str,
    code: i64,
    command: &'static str,
    job_id: &JobId,
    state: Option<&str>,
) -> bullmq_core::Error {
    answered_refusal(code, command, job_id, state)
        .unwrap_or_else(|| unexpected(context, format!("{command} answered code {code}")))
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
    /// Binds the claim's parameters, which every claiming command takes last (lock duration,
    /// now, worker name, limiter max and duration); answers the limiter max too, for
    /// `next_signal`.
    fn bind<'q>(&self, query: Query<'q>, now: i64) -> (Query<'q>, Option<i32>)
    where
        'a: 'q,
    {
        let (limiter_max, limiter_duration) = limiter_params(self.limiter);
        let query = query
            .bind(self.lock_ms)
            .bind(now)
            .bind(self.name)
            .bind(limiter_max)
            .bind(limiter_duration);
        (query, limiter_max)
    }

    fn of_worker(token: &'a str, worker: &'a WorkerSettings) -> Self {
        Self {
            token,
            lock_ms: millis(worker.lock_duration.unwrap_or(DEFAULT_LOCK_DURATION)),
            name: worker.name.as_deref(),
            limiter: worker.limiter.as_ref(),
        }
    }
}

/// A job a worker finished, with the arguments of its outcome.
#[derive(Clone, Copy)]
enum Finishing<'a> {
    Completed(&'a CompleteArgs),
    Failed(&'a FailArgs),
}

impl<'a> Finishing<'a> {
    /// What both outcomes send: the worker's token, retention and settings, and whether it
    /// takes the next job.
    fn shared(self) -> (&'a LockToken, &'a KeepJobs, &'a WorkerSettings, bool) {
        match self {
            Self::Completed(a) => (&a.token, &a.keep, &a.worker, a.fetch_next),
            Self::Failed(a) => (&a.token, &a.keep, &a.worker, a.fetch_next),
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

    /// Finishes a job (`move_to_completed` / `move_to_failed`, their `_fetch` variant when the
    /// worker takes the next job), then records it in the metrics.
    async fn finish(&self, id: &str, finishing: Finishing<'_>) -> Result<Finished> {
        let (token, keep, worker, fetch_next) = finishing.shared();
        let (state, context, plain, fused) = match finishing {
            Finishing::Completed(_) => (
                FinishedState::Completed,
                "move a job to completed",
                commands::MOVE_TO_COMPLETED,
                commands::MOVE_TO_COMPLETED_FETCH,
            ),
            Finishing::Failed(_) => (
                FinishedState::Failed,
                "move a job to failed",
                commands::MOVE_TO_FAILED,
                commands::MOVE_TO_FAILED_FETCH,
            ),
        };
        let command = if fetch_next { fused } else { plain };
        let finished = self.now_ms();
        let (remove_all, keep_age, keep_count) = super::keep_params(keep);
        let stacktrace = match finishing {
            Finishing::Completed(_) => None,
            Finishing::Failed(a) => stacktrace_param(&a.fields),
        };
        let query = sqlx::query(command.text)
            .bind(self.queue_name())
            .bind(id)
            .bind(token.as_str());
        let query = match finishing {
            Finishing::Completed(a) => query.bind(a.return_value.as_str()),
            Finishing::Failed(a) => query
                .bind(a.failed_reason.as_str())
                .bind(stacktrace.as_deref()),
        };
        let query = query
            .bind(finished)
            .bind(remove_all)
            .bind(keep_age)
            .bind(keep_count);
        let claimed = if fetch_next {
            // One transaction finishes this job and claims the next, locked with the same
            // token (upstream's fused command).
            let (query, limiter_max) =
                Claim::of_worker(token.as_str(), worker).bind(query, finished);
            let rows = query
                .fetch_all_on(self.lanes())
                .await
                .map_err(refusal("moveToFinished", Some(id)))?;
            Some((rows, limiter_max))
        } else {
            query
                .execute_on(self.lanes())
                .await
                .map_err(refusal("moveToFinished", Some(id)))?;
            None
        };
        self.collect_metrics(worker, state, finished).await?;
        let next = match claimed {
            Some((rows, limiter_max)) => Some(
                self.next_job_result(context, rows, limiter_max, finished)
                    .await?,
            ),
            None => None,
        };
        Ok(Finished {
            next,
            finished_on: finished_on(finished),
        })
    }

    /// `move_to_active` with explicit claim parameters, shared by the worker's fetch and
    /// `move_to_delayed`'s.
    async fn claim(&self, claim: &Claim<'_>) -> Result<NextJob> {
        const CONTEXT: &str = "move a job to active";
        let now = self.now_ms();
        let query = sqlx::query(commands::MOVE_TO_ACTIVE.text)
            .bind(self.queue_name())
            .bind(claim.token);
        let (query, limiter_max) = claim.bind(query, now);
        let rows = query
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
        let claim = Claim {
            token: fetch.token.as_str(),
            lock_ms: millis(fetch.lock_duration),
            name: fetch.worker_name.as_deref(),
            limiter: fetch.limiter.as_ref(),
        };
        self.with_repairs(None, || self.claim(&claim)).await
    }

    async fn move_to_completed(&self, job: &Job, args: &CompleteArgs) -> Result<Finished> {
        self.with_repairs(Some(job.id.as_str()), || {
            self.finish(job.id.as_str(), Finishing::Completed(args))
        })
        .await
    }

    async fn move_to_failed(&self, job: &Job, args: &FailArgs) -> Result<Finished> {
        self.with_repairs(Some(job.id.as_str()), || {
            self.finish(job.id.as_str(), Finishing::Failed(args))
        })
        .await
    }

    async fn move_to_delayed(&self, job_id: &JobId, args: &DelayArgs) -> Result<Option<NextJob>> {
        // Two statements, each repaired and run again on its own: running the delay again
        // after the claim failed would find the job delayed already, and refuse.
        self.with_repairs(Some(job_id.as_str()), || self.delay_job(job_id, args))
            .await?;
        if !args.fetch_next {
            return Ok(None);
        }
        let Some(token) = args.token.as_ref() else {
            return Ok(Some(NextJob::default()));
        };
        let claim = Claim::of_worker(token.as_str(), &args.worker);
        let next = self.with_repairs(None, || self.claim(&claim)).await?;
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
        let code: i32 = one_value(rows, "code", CONTEXT)?;
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
        let n: i64 = one_value(rows, "n", CONTEXT)?;
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
        self.with_repairs(Some(job_id.as_str()), || {
            self.retry(job_id, lifo, token, fields)
        })
        .await
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
        let code: i32 = one_value(rows, "code", CONTEXT)?;
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
        let rows = self
            .keyed_rows(commands::PROMOTE, job_id.as_str(), CONTEXT)
            .await?;
        let code: i32 = one_value(rows, "code", CONTEXT)?;
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
        self.with_repairs(None, || self.stalled(check)).await
    }
}

impl PostgresBackend {
    /// `move_stalled_jobs_to_wait`, once.
    async fn stalled(&self, check: &StalledCheck) -> Result<Vec<JobId>> {
        const CONTEXT: &str = "move stalled jobs to wait";
        let rows = sqlx::query(commands::MOVE_STALLED_JOBS_TO_WAIT.text)
            .bind(self.queue_name())
            .bind(to_i32(u64::from(check.max_stalled_count)))
            .bind(self.now_ms())
            .bind(millis(check.stalled_interval))
            .fetch_all_on(self.lanes())
            .await
            .map_err(sql_error(CONTEXT))?;
        id_column(&rows, CONTEXT)
    }

    /// `move_to_delayed`, once (the claim of the next job is the caller's).
    async fn delay_job(&self, job_id: &JobId, args: &DelayArgs) -> Result<()> {
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
        Ok(())
    }

    /// `retry_job`, once.
    async fn retry(
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
}
