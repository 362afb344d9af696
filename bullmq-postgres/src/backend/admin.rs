//! `Admin` for PostgreSQL: upstream's `pause`, `drain`, `clean`, `obliterate`, `retry_jobs`,
//! `promote_jobs`, `set_rate_limit` and `remove_rate_limit` commands, run as Node.js's
//! `PostgresQueueBackend` runs them.

use std::time::Duration;

use bullmq_core::backend::{Admin, Batch, ObliterateArgs, ObliterateRefusal};
use bullmq_core::job::FinishedState;
use bullmq_core::{JobId, JobState, Result};

use super::{PostgresBackend, id_column, one_value, unexpected};
use crate::sql::commands;
use crate::wire;

/// `retry_jobs` and `promote_jobs` answer how many jobs they moved; Node.js's queue loops
/// while that is non-zero, so any move means another round may find more.
fn moved_batch(moved: i32) -> Batch {
    if moved > 0 { Batch::More } else { Batch::Done }
}

impl Admin for PostgresBackend {
    async fn pause(&self, pause: bool) -> Result<()> {
        // One meta flag on PostgreSQL: resuming moves nothing, so one call does it all.
        let query = wire::queued(commands::PAUSE, self.queue_name()).bind(pause);
        self.execute(query, "pause").await?;
        Ok(())
    }

    async fn drain(&self, delayed: bool) -> Result<()> {
        let query = wire::queued(commands::DRAIN, self.queue_name()).bind(delayed);
        self.execute(query, "drain").await?;
        Ok(())
    }

    async fn clean_jobs_by_state(
        &self,
        state: JobState,
        before_ms: u64,
        limit: u32,
    ) -> Result<Vec<JobId>> {
        let query = wire::admin::clean(self.queue_name(), state, before_ms, limit);
        let rows = self.rows(query, "cleanJobsByState").await?;
        id_column(&rows, "cleanJobsByState")
    }

    async fn obliterate(&self, args: ObliterateArgs) -> Result<Result<Batch, ObliterateRefusal>> {
        let query = wire::admin::obliterate(self.queue_name(), args.count, args.force);
        let rows = self.rows(query, "obliterate").await?;
        let cursor: i32 = one_value(rows, "cursor", "obliterate")?;
        match cursor {
            -1 => Ok(Err(ObliterateRefusal::NotPaused)),
            -2 => Ok(Err(ObliterateRefusal::ActiveJobs)),
            0 => Ok(Ok(Batch::Done)),
            1 => Ok(Ok(Batch::More)),
            other => Err(unexpected(
                "obliterate",
                format!("obliterate answered {other}"),
            )),
        }
    }

    async fn retry_finished_jobs(
        &self,
        state: FinishedState,
        count: u32,
        before_ms: u64,
    ) -> Result<Batch> {
        let query = wire::admin::retry_jobs(self.queue_name(), state, count, before_ms);
        let rows = self.rows(query, "retryFinishedJobs").await?;
        let moved: i32 = one_value(rows, "n", "retryFinishedJobs")?;
        Ok(moved_batch(moved))
    }

    async fn promote_jobs(&self, count: u32) -> Result<Batch> {
        let query = wire::admin::promote_jobs(self.queue_name(), count);
        let rows = self.rows(query, "promoteJobs").await?;
        let moved: i32 = one_value(rows, "n", "promoteJobs")?;
        Ok(moved_batch(moved))
    }

    /// Always 0, as Node.js answers on PostgreSQL: a job is one row inserted in the same
    /// transaction as its state, so no job data can outlive its state (no orphans exist).
    async fn remove_orphaned_jobs(&self, _count: u32, _limit: u32) -> Result<u64> {
        Ok(0)
    }

    async fn set_rate_limit(&self, expire: Duration) -> Result<()> {
        let query = wire::admin::set_rate_limit(self.queue_name(), expire, self.now_ms());
        self.execute(query, "setRateLimit").await?;
        Ok(())
    }

    async fn remove_rate_limit_key(&self) -> Result<bool> {
        let rows = self
            .queue_rows(commands::REMOVE_RATE_LIMIT, "removeRateLimitKey")
            .await?;
        let removed: i32 = one_value(rows, "n", "removeRateLimitKey")?;
        Ok(removed > 0)
    }

    /// Unsupported: the pre-5.0 priority key is a Redis key; upstream's PostgreSQL backend
    /// throws `notImplemented` here.
    async fn remove_deprecated_priority_key(&self) -> Result<u64> {
        Err(bullmq_core::Error::Unsupported {
            operation: "removeDeprecatedPriorityKey",
            backend: "postgres",
        })
    }
}
