//! `Locks` for PostgreSQL: `extend_lock` and `extend_locks`, as Node.js's backend runs them
//! (the new lock ends `duration` after the backend's now).

use std::time::Duration;

use bullmq_core::backend::{LockToken, Locks};
use bullmq_core::{JobId, Result};

use super::{PostgresBackend, id_column, one_value};
use crate::wire::locks as wire;

impl Locks for PostgresBackend {
    async fn extend_lock(
        &self,
        job_id: &JobId,
        token: &LockToken,
        duration: Duration,
    ) -> Result<bool> {
        const CONTEXT: &str = "extend a job lock";
        let query = wire::extend_lock(self.job_at(job_id), token, duration, self.now_ms());
        let rows = self.rows(query, CONTEXT).await?;
        let renewed: i32 = one_value(rows, "n", CONTEXT)?;
        // The function answers the number of rows it renewed: 1, or 0 when the lock was lost.
        Ok(renewed > 0)
    }

    async fn extend_locks(
        &self,
        locks: &[(JobId, LockToken)],
        duration: Duration,
    ) -> Result<Vec<JobId>> {
        const CONTEXT: &str = "extend job locks";
        let query = wire::extend_locks(self.queue_name(), locks, duration, self.now_ms());
        let rows = self.rows(query, CONTEXT).await?;
        // The rows are the ids whose lock could not be renewed, in input order.
        id_column(&rows, CONTEXT)
    }
}
