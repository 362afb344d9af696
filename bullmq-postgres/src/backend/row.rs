//! A `job` row read as a [`Job`], the way Node.js's `rowToJobJson` + `Job.fromJSON` read it.
//!
//! The row was written by any runtime, so nothing here panics: a column of an unexpected
//! type or an option set that cannot be read becomes a [`JobDecodeError`] naming the job and
//! the field (in the job-hash field names every runtime knows), and the worker fails that job
//! with the reason instead of losing it.

use std::time::Duration;

use bullmq_core::job::{JobDecodeError, ParentRef};
use bullmq_core::{Job, JobId, JobOptions};
use bullmq_core::{codec, json};
use serde_json::Value;
use serde_json::value::RawValue;
use sqlx::Row as _;
use sqlx::postgres::PgRow;

/// Reads one column, naming `field` (the job-hash name) when it has an unexpected type.
fn column<'r, T>(
    row: &'r PgRow,
    column: &str,
    id: &str,
    field: &'static str,
) -> Result<T, JobDecodeError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    row.try_get(column).map_err(|e| JobDecodeError {
        job_id: id.to_owned(),
        field,
        reason: e.to_string(),
    })
}

/// A count column (`integer`) as the `u32` a [`Job`] holds; a negative count reads as 0.
fn count(row: &PgRow, name: &str, id: &str, field: &'static str) -> Result<u32, JobDecodeError> {
    let value: Option<i32> = column(row, name, id, field)?;
    Ok(value.map_or(0, |v| u32::try_from(v).unwrap_or(0)))
}

/// A nullable Unix-ms column as `Option<u64>` (a negative value reads as absent).
fn opt_millis(row: &PgRow, name: &str) -> Result<Option<u64>, sqlx::Error> {
    let value: Option<i64> = row.try_get(name)?;
    Ok(value.and_then(|v| u64::try_from(v).ok()))
}

/// A jsonb column's text as PostgreSQL prints it (spaced, keys in jsonb's order).
type RawJson = sqlx::types::Json<Box<RawValue>>;

/// The job's data as a Node.js processor sees it: `JSON.parse` of the stored text (keys in
/// JavaScript's order, compact), and `{}` for SQL `NULL` or JSON `null`, as upstream reads a
/// row with `data ?? {}`.
fn data_text(data: Option<&RawJson>) -> String {
    match data.map(|d| d.0.get().trim()) {
        None | Some("null") => "{}".to_owned(),
        Some(text) => json::js_view(text).into_owned(),
    }
}

/// The job in `row` (a `SELECT * FROM job` row, or a function returning `SETOF job`).
pub(crate) fn job_from_row(row: &PgRow) -> Result<Job, JobDecodeError> {
    let id: String = column(row, "id", "?", "id")?;
    let id = id.as_str();
    let millis = |name: &str, field: &'static str| -> Result<Option<u64>, JobDecodeError> {
        opt_millis(row, name).map_err(|e| JobDecodeError {
            job_id: id.to_owned(),
            field,
            reason: e.to_string(),
        })
    };

    let opts: Option<Value> = column(row, "opts", id, "opts")?;
    let decoded = match &opts {
        Some(value) => codec::options_from_value(value).map_err(|e| JobDecodeError {
            job_id: id.to_owned(),
            field: "opts",
            reason: e.to_string(),
        })?,
        None => codec::DecodedOptions::default(),
    };

    let mut job = Job::new(
        column::<String>(row, "name", id, "name")?,
        data_text(column::<Option<RawJson>>(row, "data", id, "data")?.as_ref()),
        JobOptions::default(),
        millis("added_at_ms", "timestamp")?.unwrap_or(0),
    );
    job.id = JobId::from(id);
    job.opts = decoded.options;
    job.invalid_opts = decoded.invalid;
    job.delay = Duration::from_millis(millis("delay_ms", "delay")?.unwrap_or(0));
    job.priority = i64::from(column::<Option<i32>>(row, "priority", id, "priority")?.unwrap_or(0));
    job.processed_on = millis("processed_at_ms", "processedOn")?;
    job.finished_on = millis("finished_at_ms", "finishedOn")?;
    job.return_value = column::<Option<RawJson>>(row, "return_value", id, "returnvalue")?
        .map(|v| json::js_view(v.0.get()).into_owned());
    job.failed_reason = column(row, "failed_reason", id, "failedReason")?;
    job.stacktrace = match column::<Option<Value>>(row, "stacktrace", id, "stacktrace")? {
        // Node reads an unreadable stack trace as none; so do we.
        Some(value) => serde_json::from_value(value).unwrap_or_default(),
        None => Vec::new(),
    };
    job.attempts_made = count(row, "attempts_made", id, "atm")?;
    job.attempts_started = count(row, "attempts_started", id, "ats")?;
    job.stalled_counter = count(row, "stalled_count", id, "stc")?;
    job.processed_by = column(row, "processed_by", id, "pb")?;
    job.progress =
        column::<Option<Value>>(row, "progress", id, "progress")?.unwrap_or_else(|| Value::from(0));
    job.parent_key = column(row, "parent_key", id, "parentKey")?;
    let parent_id: Option<String> = column(row, "parent_id", id, "parent")?;
    let parent_queue: Option<String> = column(row, "parent_queue", id, "parent")?;
    job.parent = parent_id.map(|parent_id| ParentRef {
        id: Some(parent_id),
        queue_key: parent_queue.unwrap_or_default(),
        ..ParentRef::default()
    });
    job.repeat_job_key = column(row, "scheduler_id", id, "rjk")?;
    job.deduplication_id = column(row, "dedup_id", id, "deid")?;
    job.deferred_failure = column(row, "deferred_failure", id, "defa")?;
    Ok(job)
}
