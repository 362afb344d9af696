//! `Transitions` for PostgreSQL: `move_to_active` (with `next_signal` when nothing was
//! taken), `move_to_completed`/`move_to_failed` (their `_fetch` variants when the worker takes
//! the next job in the same transaction, then `collect_metrics`), `move_to_delayed`,
//! `move_to_waiting_children`, `move_active_to_wait`, `retry_job`, `reprocess_job`, `promote`
//! and `move_stalled_jobs_to_wait`, with the parameters Node.js's PostgreSQL backend passes.

use std::time::Duration;

use bullmq_core::backend::{
    CompleteArgs, DelayArgs, FailArgs, FetchParams, FetchedJob, FieldUpdates, Finished, LockToken,
    NextJob, ReprocessOptions, StalledCheck, Transitions, WorkerSettings,
};
use bullmq_core::job::FinishedState;
use bullmq_core::{Job, JobId, Result};
use sqlx::Row as _;
use sqlx::postgres::PgRow;

use super::{
    PostgresBackend, answered_refusal, id_column, job_from_row, one_value, refusal, sql_error,
    unexpected,
};
use crate::connection::{OnLane as _, Query};
use crate::sql::commands;
use crate::wire::JobAt;
use crate::wire::transitions::{self as wire, Claim, Finishing};

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
        let query = wire::next_signal(self.queue_name(), limiter_max, now);
        let signals = self.rows(query, context).await?;
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
        let Some(query) = wire::collect_metrics(self.queue_name(), worker, kind, finished_on)
        else {
            return Ok(());
        };
        self.execute(query, "collect metrics").await?;
        Ok(())
    }

    /// Finishes a job (`move_to_completed` / `move_to_failed`, their `_fetch` variant when the
    /// worker takes the next job), then records it in the metrics.
    async fn finish(&self, id: &str, finishing: Finishing<'_>) -> Result<Finished> {
        let (token, _, worker, fetch_next) = finishing.shared();
        let (state, context) = match finishing {
            Finishing::Completed(_) => (FinishedState::Completed, "move a job to completed"),
            Finishing::Failed(_) => (FinishedState::Failed, "move a job to failed"),
        };
        let finished = self.now_ms();
        let query = wire::move_to_finished(
            JobAt {
                queue: self.queue_name(),
                id,
            },
            finishing,
            finished,
        );
        let claimed = if fetch_next {
            let rows = query
                .fetch_all_on(self.lanes())
                .await
                .map_err(refusal("moveToFinished", Some(id)))?;
            let limiter_max = Claim::of_worker(token.as_str(), worker).limiter_max();
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
        let rows = self
            .rows(wire::move_to_active(self.queue_name(), claim, now), CONTEXT)
            .await?;
        self.next_job_result(CONTEXT, rows, claim.limiter_max(), now)
            .await
    }
}

/// Finished-on as the `u64` the core reports (the clock never reads negative).
fn finished_on(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

impl Transitions for PostgresBackend {
    async fn move_to_active(&self, fetch: &FetchParams) -> Result<NextJob> {
        let claim = Claim::of_fetch(fetch);
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
        self.with_repairs(Some(job_id.as_str()), || {
            let delay = wire::delay_job(self.job_at(job_id), args);
            self.run_on_job(delay, "moveToDelayed", job_id)
        })
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
        // Upstream's function takes no child key: it parks the parent on any pending child.
        let rows = wire::move_to_waiting_children(self.job_at(job_id), token)
            .fetch_all_on(self.lanes())
            .await
            .map_err(refusal("moveToWaitingChildren", Some(job_id.as_str())))?;
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
        let query = wire::move_active_to_wait(self.job_at(job_id), token, self.now_ms());
        let rows = self.rows(query, CONTEXT).await?;
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
            let retry = wire::retry_job(self.job_at(job_id), lifo, token, fields);
            self.run_on_job(retry, "retryJob", job_id)
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
        let query = wire::reprocess_job(self.job_at(&job.id), job, state, opts);
        let rows = self.rows(query, CONTEXT).await?;
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
        let query = wire::move_stalled_jobs_to_wait(self.queue_name(), check, self.now_ms());
        let rows = self.rows(query, CONTEXT).await?;
        id_column(&rows, CONTEXT)
    }

    /// Runs `statement`, upstream's `command` on job `job_id` answering no rows, once: a
    /// refusal reads as that command's.
    async fn run_on_job(
        &self,
        statement: Query<'_>,
        command: &'static str,
        job_id: &JobId,
    ) -> Result<()> {
        statement
            .execute_on(self.lanes())
            .await
            .map_err(refusal(command, Some(job_id.as_str())))?;
        Ok(())
    }
}
