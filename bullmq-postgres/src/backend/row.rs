//! A `job` row read as a [`Job`], the way Node.js's `rowToJobJson` + `Job.fromJSON` read it.
//!
//! The row was written by any runtime, so nothing here panics: a column of an unexpected
//! type or an option set that cannot be read becomes a [`JobDecodeError`] naming the job and
//! the field (in the job-hash field names every runtime knows), and the worker fails that job
//! with the reason instead of losing it. Reading is two steps: the columns as sqlx hands them
//! ([`JobRow::read`], `jsonb` as its text), then that text decoded ([`JobRow::into_job`]), the
//! step the fuzz targets drive.

use std::time::Duration;

use bullmq_core::job::{JobDecodeError, ParentRef};
use bullmq_core::{Job, JobId, JobOptions};
use bullmq_core::{codec, json};
use serde_json::Value;
use serde_json::value::RawValue;
use sqlx::Row as _;
use sqlx::postgres::PgRow;

/// A `job` row's columns, `jsonb` ones as the text PostgreSQL prints (spaced, keys in jsonb's
/// order); column names as in the schema.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobRow {
    /// `id`.
    pub id: String,
    /// `name`.
    pub name: String,
    /// `data` (`jsonb`).
    pub data: Option<String>,
    /// `opts` (`jsonb`).
    pub opts: Option<String>,
    /// `added_at_ms`.
    pub added_at_ms: Option<i64>,
    /// `delay_ms`.
    pub delay_ms: Option<i64>,
    /// `priority`.
    pub priority: Option<i32>,
    /// `processed_at_ms`.
    pub processed_at_ms: Option<i64>,
    /// `finished_at_ms`.
    pub finished_at_ms: Option<i64>,
    /// `return_value` (`jsonb`).
    pub return_value: Option<String>,
    /// `failed_reason`.
    pub failed_reason: Option<String>,
    /// `stacktrace` (`jsonb`).
    pub stacktrace: Option<String>,
    /// `attempts_made`.
    pub attempts_made: Option<i32>,
    /// `attempts_started`.
    pub attempts_started: Option<i32>,
    /// `stalled_count`.
    pub stalled_count: Option<i32>,
    /// `processed_by`.
    pub processed_by: Option<String>,
    /// `progress` (`jsonb`).
    pub progress: Option<String>,
    /// `parent_key`.
    pub parent_key: Option<String>,
    /// `parent_id`.
    pub parent_id: Option<String>,
    /// `parent_queue`.
    pub parent_queue: Option<String>,
    /// `scheduler_id`.
    pub scheduler_id: Option<String>,
    /// `dedup_id`.
    pub dedup_id: Option<String>,
    /// `deferred_failure`.
    pub deferred_failure: Option<String>,
}

/// A jsonb column's text as PostgreSQL prints it (spaced, keys in jsonb's order).
type RawJson = sqlx::types::Json<Box<RawValue>>;

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

/// A `jsonb` column's text.
fn json_column(
    row: &PgRow,
    name: &str,
    id: &str,
    field: &'static str,
) -> Result<Option<String>, JobDecodeError> {
    Ok(column::<Option<RawJson>>(row, name, id, field)?.map(|v| v.0.get().to_owned()))
}

/// A count column (`integer`) as the `u32` a [`Job`] holds; a negative count reads as 0.
fn count(value: Option<i32>) -> u32 {
    value.map_or(0, |v| u32::try_from(v).unwrap_or(0))
}

/// A nullable Unix-ms column as `Option<u64>` (a negative value reads as absent).
fn millis(value: Option<i64>) -> Option<u64> {
    value.and_then(|v| u64::try_from(v).ok())
}

/// The job's data as a Node.js processor sees it: `JSON.parse` of the stored text (keys in
/// JavaScript's order, compact), and `{}` for SQL `NULL` or JSON `null`, as upstream reads a
/// row with `data ?? {}`.
fn data_text(data: Option<&str>) -> String {
    match data.map(str::trim) {
        None | Some("null") => "{}".to_owned(),
        Some(text) => json::js_view(text).into_owned(),
    }
}

impl JobRow {
    /// The columns of `row` (a `SELECT * FROM job` row, or a function returning `SETOF job`).
    ///
    /// # Errors
    ///
    /// A column missing or of another type, named by its job-hash field.
    pub fn read(row: &PgRow) -> Result<Self, JobDecodeError> {
        let id: String = column(row, "id", "?", "id")?;
        let i = id.as_str();
        let ms = |name: &str, field: &'static str| column::<Option<i64>>(row, name, i, field);
        Ok(Self {
            name: column(row, "name", i, "name")?,
            data: json_column(row, "data", i, "data")?,
            opts: json_column(row, "opts", i, "opts")?,
            added_at_ms: ms("added_at_ms", "timestamp")?,
            delay_ms: ms("delay_ms", "delay")?,
            priority: column(row, "priority", i, "priority")?,
            processed_at_ms: ms("processed_at_ms", "processedOn")?,
            finished_at_ms: ms("finished_at_ms", "finishedOn")?,
            return_value: json_column(row, "return_value", i, "returnvalue")?,
            failed_reason: column(row, "failed_reason", i, "failedReason")?,
            stacktrace: json_column(row, "stacktrace", i, "stacktrace")?,
            attempts_made: column(row, "attempts_made", i, "atm")?,
            attempts_started: column(row, "attempts_started", i, "ats")?,
            stalled_count: column(row, "stalled_count", i, "stc")?,
            processed_by: column(row, "processed_by", i, "pb")?,
            progress: json_column(row, "progress", i, "progress")?,
            parent_key: column(row, "parent_key", i, "parentKey")?,
            parent_id: column(row, "parent_id", i, "parent")?,
            parent_queue: column(row, "parent_queue", i, "parent")?,
            scheduler_id: column(row, "scheduler_id", i, "rjk")?,
            dedup_id: column(row, "dedup_id", i, "deid")?,
            deferred_failure: column(row, "deferred_failure", i, "defa")?,
            id,
        })
    }

    /// The job these columns hold.
    ///
    /// # Errors
    ///
    /// Options that are not a JSON object, or `jsonb` text that is not JSON where Node.js
    /// would fail too, named by its job-hash field.
    pub fn into_job(self) -> Result<Job, JobDecodeError> {
        let id = self.id;
        let bad = |field: &'static str, reason: String| JobDecodeError {
            job_id: id.clone(),
            field,
            reason,
        };
        let json = |text: Option<&str>, field: &'static str| -> Result<Option<Value>, _> {
            text.map(serde_json::from_str::<Value>)
                .transpose()
                .map_err(|e| bad(field, e.to_string()))
        };
        let decoded = match json(self.opts.as_deref(), "opts")? {
            Some(value) => {
                codec::options_from_value(&value).map_err(|e| bad("opts", e.to_string()))?
            }
            None => codec::DecodedOptions::default(),
        };
        let stacktrace = json(self.stacktrace.as_deref(), "stacktrace")?;
        let progress = json(self.progress.as_deref(), "progress")?;

        let mut job = Job::new(
            self.name,
            data_text(self.data.as_deref()),
            JobOptions::default(),
            millis(self.added_at_ms).unwrap_or(0),
        );
        job.id = JobId::from(id.as_str());
        job.opts = decoded.options;
        job.invalid_opts = decoded.invalid;
        job.delay = Duration::from_millis(millis(self.delay_ms).unwrap_or(0));
        job.priority = i64::from(self.priority.unwrap_or(0));
        job.processed_on = millis(self.processed_at_ms);
        job.finished_on = millis(self.finished_at_ms);
        job.return_value = self.return_value.map(|v| json::js_view(&v).into_owned());
        job.failed_reason = self.failed_reason;
        // Node reads an unreadable stack trace as none; so do we.
        job.stacktrace = stacktrace
            .and_then(|value| serde_json::from_value(value).ok())
            .unwrap_or_default();
        job.attempts_made = count(self.attempts_made);
        job.attempts_started = count(self.attempts_started);
        job.stalled_counter = count(self.stalled_count);
        job.processed_by = self.processed_by;
        job.progress = progress.unwrap_or_else(|| Value::from(0));
        job.parent_key = self.parent_key;
        job.parent = self.parent_id.map(|parent_id| ParentRef {
            id: Some(parent_id),
            queue_key: self.parent_queue.unwrap_or_default(),
            ..ParentRef::default()
        });
        job.repeat_job_key = self.scheduler_id;
        job.deduplication_id = self.dedup_id;
        job.deferred_failure = self.deferred_failure;
        Ok(job)
    }
}

/// The job in `row` (a `SELECT * FROM job` row, or a function returning `SETOF job`).
pub(crate) fn job_from_row(row: &PgRow) -> Result<Job, JobDecodeError> {
    JobRow::read(row)?.into_job()
}
