//! `Schedulers` for PostgreSQL: upstream's `add_job_scheduler`, `update_job_scheduler`,
//! `remove_job_scheduler`, `get_job_scheduler`, `is_job_scheduler`,
//! `get_job_schedulers_range` and `get_job_schedulers_count` commands, with the parameters
//! Node.js's `PostgresQueueBackend` passes.
//!
//! The functions name each iteration `repeat:<scheduler id>:<next millis>` themselves, as the
//! Redis scripts do; a scheduler row is read back through the same hash shape Node.js's
//! `mapSchedulerRow` builds, so both backends decode it alike.

use std::time::Duration;

use bullmq_core::backend::{
    AddJobSchedulerArgs, JobSchedulerRecord, NextIterationArgs, Schedulers,
};
use bullmq_core::{JobId, Result};
use serde_json::Value;
use sqlx::Row as _;
use sqlx::postgres::PgRow;

use super::{PostgresBackend, one_row, one_value, refusal, sql_error};
use crate::connection::OnLane as _;
use crate::sql::commands;
use crate::wire::{
    self,
    schedulers::{add_job_scheduler, update_job_scheduler},
};

/// A row of `get_job_scheduler` as the string hash Node.js's `mapSchedulerRow` builds (absent
/// fields left out, an empty template left out), decoded by the codec every backend shares.
fn scheduler_from_row(id: &str, row: &PgRow) -> Result<Option<JobSchedulerRecord>> {
    const CONTEXT: &str = "getJobScheduler";
    let text = |col: &str| -> Result<Option<String>> {
        row.try_get::<Option<String>, _>(col)
            .map_err(sql_error(CONTEXT))
    };
    let int = |col: &str| -> Result<Option<i64>> {
        row.try_get::<Option<i64>, _>(col)
            .map_err(sql_error(CONTEXT))
    };
    let int4 = |col: &str| -> Result<Option<i32>> {
        row.try_get::<Option<i32>, _>(col)
            .map_err(sql_error(CONTEXT))
    };
    let json = |col: &str| -> Result<Option<String>> {
        let value: Option<Value> = row.try_get(col).map_err(sql_error(CONTEXT))?;
        // As Node.js reads it: JavaScript's key order and number text.
        let as_node = |v: Value| {
            bullmq_core::json::to_string(&v)
                .map(|t| bullmq_core::json::js_view(&t).into_owned())
                .unwrap_or_default()
        };
        Ok(value.map(as_node).filter(|s| s != "{}"))
    };
    let mut fields: Vec<(String, String)> = Vec::with_capacity(11);
    let mut push = |field: &str, value: Option<String>| {
        if let Some(value) = value {
            fields.push((field.to_owned(), value));
        }
    };
    push("name", text("name")?);
    push("ic", int4("iteration_count")?.map(|n| n.to_string()));
    push("limit", int4("limit_count")?.map(|n| n.to_string()));
    push("startDate", int("start_date_ms")?.map(|n| n.to_string()));
    push("endDate", int("end_date_ms")?.map(|n| n.to_string()));
    push("tz", text("tz")?);
    push("pattern", text("pattern")?);
    push("every", int("every_ms")?.map(|n| n.to_string()));
    push("offset", int("offset_ms")?.map(|n| n.to_string()));
    push("data", json("template_data")?);
    push("opts", json("template_opts")?);
    let next = int("next_run_ms")?.and_then(|n| u64::try_from(n).ok());
    Ok(JobSchedulerRecord::from_hash(id, fields, next)?)
}

impl Schedulers for PostgresBackend {
    async fn add_job_scheduler(&self, args: &AddJobSchedulerArgs) -> Result<(JobId, Duration)> {
        const COMMAND: &str = "addJobScheduler";
        let rows = add_job_scheduler(self.queue_name(), args, self.now_ms())?
            .fetch_all_on(self.lanes())
            .await
            .map_err(refusal(COMMAND, None))?;
        let row = one_row(rows, COMMAND)?;
        let id: String = row.try_get("job_id").map_err(sql_error(COMMAND))?;
        let delay: i64 = row.try_get("delay").map_err(sql_error(COMMAND))?;
        Ok((
            JobId::from(id),
            Duration::from_millis(u64::try_from(delay).unwrap_or_default()),
        ))
    }

    async fn update_job_scheduler_next_millis(
        &self,
        args: &NextIterationArgs,
    ) -> Result<Option<JobId>> {
        const COMMAND: &str = "updateJobSchedulerNextMillis";
        let query = update_job_scheduler(self.queue_name(), args, self.now_ms())?;
        let rows = self.rows(query, COMMAND).await?;
        // NULL when the scheduler is gone, another producer owns the current iteration, or the
        // next iteration exists already.
        let id: Option<String> = match rows.first() {
            Some(row) => row.try_get("job_id").map_err(sql_error(COMMAND))?,
            None => None,
        };
        Ok(id.map(JobId::from))
    }

    async fn remove_job_scheduler(&self, scheduler_id: &str) -> Result<bool> {
        const COMMAND: &str = "removeJobScheduler";
        let rows = self
            .keyed_rows(commands::REMOVE_JOB_SCHEDULER, scheduler_id, COMMAND)
            .await?;
        let code: i32 = one_value(rows, "removed", COMMAND)?;
        // The function answers as the Redis script does: 0 removed, 1 no such scheduler.
        Ok(code == 0)
    }

    async fn get_job_scheduler(&self, scheduler_id: &str) -> Result<Option<JobSchedulerRecord>> {
        let rows = self
            .keyed_rows(commands::GET_JOB_SCHEDULER, scheduler_id, "getJobScheduler")
            .await?;
        match rows.first() {
            Some(row) => scheduler_from_row(scheduler_id, row),
            None => Ok(None),
        }
    }

    async fn is_job_scheduler(&self, id: &str) -> Result<bool> {
        self.keyed_exists(commands::IS_JOB_SCHEDULER, id, "isJobScheduler")
            .await
    }

    async fn get_job_schedulers_range(
        &self,
        start: i64,
        end: i64,
        asc: bool,
    ) -> Result<Vec<(String, u64)>> {
        const COMMAND: &str = "getJobSchedulersRange";
        // Node.js's paging: `start` is the offset, a negative `end` means "to the end".
        let count = (end >= 0).then(|| end - start + 1);
        // An end before the start: PostgreSQL would refuse the negative LIMIT, Redis answers
        // nothing. (A negative start is refused by PostgreSQL, as it is for Node.js.)
        if count.is_some_and(|c| c <= 0) {
            return Ok(Vec::new());
        }
        let query = wire::queued(commands::GET_JOB_SCHEDULERS_RANGE, self.queue_name())
            .bind(asc)
            .bind(start)
            .bind(count);
        let rows = self.rows(query, COMMAND).await?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get("scheduler_id").map_err(sql_error(COMMAND))?;
                let next: Option<i64> = row.try_get("next_run_ms").map_err(sql_error(COMMAND))?;
                Ok((id, next.and_then(|n| u64::try_from(n).ok()).unwrap_or(0)))
            })
            .collect()
    }

    async fn get_job_schedulers_count(&self) -> Result<u64> {
        const COMMAND: &str = "getJobSchedulersCount";
        let rows = self
            .queue_rows(commands::GET_JOB_SCHEDULERS_COUNT, COMMAND)
            .await?;
        let count: i32 = one_value(rows, "count", COMMAND)?;
        Ok(u64::try_from(count).unwrap_or_default())
    }
}
