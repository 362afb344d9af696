//! `JobMutations` for PostgreSQL: upstream's `update_data`, `update_progress`, `add_log` /
//! `trim_logs`, `clear_logs`, `change_delay`, `change_priority`, `remove`,
//! `remove_unprocessed_children`, `remove_child_dependency` and the two deduplication-key
//! commands, run as Node.js's `PostgresQueueBackend` runs them, with its refusals.

use std::time::Duration;

use bullmq_core::backend::JobMutations;
use bullmq_core::{JobId, Result, ScriptError, ScriptErrorCode};

use super::{
    PostgresBackend, answered_refusal, one_value, refusal_code, script_error, sql_error, unexpected,
};
use crate::connection::{OnLane as _, Query};
use crate::sql::commands;
use crate::wire;

/// SQLSTATE `foreign_key_violation`: a log line for a job that does not exist.
const FOREIGN_KEY_VIOLATION: &str = "23503";

/// Whether `err` is PostgreSQL's foreign-key violation.
fn is_foreign_key_violation(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.code().as_deref() == Some(FOREIGN_KEY_VIOLATION))
}

/// Node.js's refusal of `command` for a job that does not exist.
fn job_not_found(command: &'static str, job_id: &JobId) -> bullmq_core::Error {
    ScriptError::new(ScriptErrorCode::JobNotFound, command, job_id.as_str()).into()
}

impl PostgresBackend {
    /// Runs one of the commands answering a single `code` column (0 ok, negative refusal):
    /// `changeDelay` and `changePriority` answer codes instead of raising `BM001`.
    async fn run_code_command(
        &self,
        query: Query<'_>,
        command: &'static str,
        job_id: &JobId,
        state: Option<&'static str>,
    ) -> Result<()> {
        let rows = self.rows(query, command).await?;
        let code: i32 = one_value(rows, "code", command)?;
        if code < 0 {
            return Err(answered_refusal(i64::from(code), command, job_id, state)
                .unwrap_or_else(|| unexpected(command, format!("{command} answered {code}"))));
        }
        Ok(())
    }
}

impl JobMutations for PostgresBackend {
    async fn update_data(&self, job_id: &JobId, data: &str) -> Result<()> {
        // `data` is already JSON text; the command casts it to jsonb.
        let query = self.job_at(job_id).keyed(commands::UPDATE_DATA).bind(data);
        let rows = self.rows(query, "updateData").await?;
        if rows.is_empty() {
            return Err(job_not_found("updateData", job_id));
        }
        Ok(())
    }

    async fn update_progress(&self, job_id: &JobId, progress: &serde_json::Value) -> Result<()> {
        let query = wire::mutations::update_progress(self.job_at(job_id), progress)?;
        let rows = self.rows(query, "updateProgress").await?;
        let updated: i32 = one_value(rows, "updated", "updateProgress")?;
        if updated == 0 {
            return Err(job_not_found("updateProgress", job_id));
        }
        Ok(())
    }

    async fn add_log(&self, job_id: &JobId, row: &str, keep_logs: Option<u32>) -> Result<u64> {
        let rows = self
            .job_at(job_id)
            .keyed(commands::ADD_LOG)
            .bind(row)
            .fetch_all_on(self.lanes())
            .await
            .map_err(|err| {
                // The log row references its job: a missing job is a foreign-key violation.
                if is_foreign_key_violation(&err) {
                    job_not_found("addLog", job_id)
                } else {
                    sql_error("addLog")(err)
                }
            })?;
        let idx: i64 = one_value(rows, "idx", "addLog")?;
        let count = u64::try_from(idx).unwrap_or(0) + 1;
        // As Node.js: a second statement trims the oldest lines beyond `keepLogs` (0 = keep all).
        match keep_logs.map(u64::from).filter(|keep| *keep > 0) {
            Some(keep) if count > keep => {
                let query = wire::mutations::trim_logs(self.job_at(job_id), count - keep);
                self.execute(query, "addLog").await?;
                Ok(keep)
            }
            _ => Ok(count),
        }
    }

    async fn clear_logs(&self, job_id: &JobId, keep_logs: Option<u32>) -> Result<()> {
        // NULL or 0 removes every line.
        let query = wire::mutations::clear_logs(self.job_at(job_id), keep_logs);
        self.execute(query, "clearLogs").await?;
        Ok(())
    }

    async fn change_delay(&self, job_id: &JobId, delay: Duration) -> Result<()> {
        let query = wire::mutations::change_delay(self.job_at(job_id), delay, self.now_ms());
        self.run_code_command(query, "changeDelay", job_id, Some("delayed"))
            .await
    }

    async fn change_priority(&self, job_id: &JobId, priority: u32, lifo: bool) -> Result<()> {
        let query = wire::mutations::change_priority(self.job_at(job_id), priority, lifo);
        self.run_code_command(query, "changePriority", job_id, None)
            .await
    }

    async fn remove(&self, job_id: &JobId, remove_children: bool) -> Result<bool> {
        // How many jobs went (the subtree counts); 0 when locked at this backend's clock, or
        // when the job is missing.
        let removed = self.remove_at_clock(job_id, remove_children).await?;
        Ok(removed > 0)
    }

    /// Upstream's function reads no clock: it skips every active child and every child that
    /// holds a token, whether or not the lock has run out (Redis removes an active child whose
    /// lock key expired). Only active jobs hold a token, so no time of ours would change
    /// what it removes; it runs as it is.
    async fn remove_unprocessed_children(&self, job_id: &JobId) -> Result<()> {
        let query = self
            .job_at(job_id)
            .keyed(commands::REMOVE_UNPROCESSED_CHILDREN);
        self.execute(query, "removeUnprocessedChildren").await?;
        Ok(())
    }

    async fn remove_child_dependency(&self, job_id: &JobId, parent_key: &str) -> Result<bool> {
        let command = "removeChildDependency";
        let rows = self
            .job_at(job_id)
            .keyed(commands::REMOVE_CHILD_DEPENDENCY)
            .bind(parent_key)
            .bind(self.now_ms())
            .fetch_all_on(self.lanes())
            .await
            // Node.js names the parent key in these refusals (missing job or parent).
            .map_err(|err| match refusal_code(&err) {
                Some(code) => ScriptError {
                    parent_key: Some(parent_key.to_owned()),
                    ..script_error(code, command, Some(job_id.as_str()), None)
                }
                .into(),
                None => sql_error(command)(err),
            })?;
        // 0: detached; 1: no such relationship.
        let code: i32 = one_value(rows, "n", command)?;
        Ok(code == 0)
    }

    async fn remove_deduplication_key(
        &self,
        deduplication_id: &str,
        job_id: &JobId,
    ) -> Result<bool> {
        let query = self
            .keyed(commands::REMOVE_DEDUPLICATION_KEY, deduplication_id)
            .bind(job_id.as_str())
            .bind(self.now_ms());
        let rows = self.rows(query, "removeDeduplicationKey").await?;
        Ok(!rows.is_empty())
    }

    async fn delete_deduplication_key(&self, deduplication_id: &str) -> Result<bool> {
        let rows = self
            .keyed_rows(
                commands::DELETE_DEDUPLICATION_KEY,
                deduplication_id,
                "deleteDeduplicationKey",
            )
            .await?;
        Ok(!rows.is_empty())
    }
}
