//! `Queries` for PostgreSQL: upstream's read-only commands (`get_state`, `is_finished`,
//! `is_maxed`, `is_job_in_state` / `is_job_in_wait` / `is_job_prioritized`, `get_job_data`,
//! `get_deduplication_job_id`, `get_job_logs_*`, `get_rate_limit_ttl`, `get_counts`,
//! `get_delayed_count`, `get_counts_per_priority`, `get_range`, `get_dependency_counts`,
//! `get_dependencies[_page]`, `get_processed_children_values`,
//! `get_ignored_children_failures`, `get_metrics`, `get_client_list`,
//! `paginate_dependencies`), run and read as Node.js' `PostgresQueueBackend` does.
//!
//! "Paused" and "prioritized" are no physical states on PostgreSQL: a prioritized job is a
//! waiting job with `priority > 0`, and a paused queue is a `meta` flag over its waiting jobs.

use std::time::Duration;

use bullmq_core::backend::{
    ClientInfo, Dependencies, DependenciesQuery, DependencyKind, FinishStatus, JobLogs, Metrics,
    Page, Queries, Range, RangeIds, ScalingObservation, ScalingSignals,
};
use bullmq_core::codec;
use bullmq_core::job::{FinishedState, JobType};
use bullmq_core::{Error, Job, JobId, JobState, Result};
use serde_json::Value;
use sqlx::Row as _;
use sqlx::postgres::PgRow;

use super::{PostgresBackend, id_column, job_from_row, one_row, one_value, sql_error};
use crate::connection::client_name;
use crate::sql::{SqlCommand, commands};
use crate::wire::{self, to_i64};

/// A `bigint` count column as `u64` (a negative value reads as 0).
fn count_column(row: &PgRow, name: &str, what: &'static str) -> Result<u64> {
    let n: Option<i64> = row.try_get(name).map_err(sql_error(what))?;
    Ok(n.and_then(|n| u64::try_from(n).ok()).unwrap_or(0))
}

/// The `present` flag every `is_job_*` command answers with.
fn present(rows: Vec<PgRow>, what: &'static str) -> Result<bool> {
    one_value(rows, "present", what)
}

/// A `job_state` enum column as text. The enum is the schema's own type, which sqlx's `String`
/// does not claim; its binary form is the label's UTF-8 text, so it decodes unchecked.
fn state_column(row: &PgRow, what: &'static str) -> Result<String> {
    row.try_get_unchecked("state").map_err(sql_error(what))
}

/// A processed child's stored value as the JSON text Node.js writes for it (SQL NULL reads
/// `null`): JavaScript's key order and number text.
fn json_text(value: Option<&Value>) -> String {
    value
        .and_then(|v| bullmq_core::json::to_string(v).ok())
        .map_or_else(
            || "null".to_owned(),
            |t| bullmq_core::json::js_view(&t).into_owned(),
        )
}

/// An ignored or failed child's stored reason (a JSON string scalar) as plain text.
fn reason_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// A dependency page's keys, each with its value as `text` renders it.
fn texts(
    page: Vec<(String, Option<Value>)>,
    text: fn(Option<&Value>) -> String,
) -> Vec<(String, String)> {
    page.into_iter()
        .map(|(k, v)| (k, text(v.as_ref())))
        .collect()
}

/// A dependency page's keys.
fn keys(page: Vec<(String, Option<Value>)>) -> Vec<String> {
    page.into_iter().map(|(k, _)| k).collect()
}

/// The `(child_key, value)` columns of a dependency row.
fn dependency_row(row: &PgRow, what: &'static str) -> Result<(String, Option<Value>)> {
    let key: String = row.try_get("child_key").map_err(sql_error(what))?;
    let value: Option<Value> = row.try_get("value").map_err(sql_error(what))?;
    Ok((key, value))
}

/// The `(offset, limit)` of an inclusive, Redis-style `start..=end` slice of a list of `count`
/// items (negative indexes count from the end), as Node.js' `getJobLogs` computes them; `None`
/// when the slice is empty.
fn log_window(count: i64, range: Range) -> Option<(i64, i64)> {
    let from = if range.start < 0 {
        count.saturating_add(range.start).max(0)
    } else {
        range.start
    };
    let to = if range.end < 0 {
        count.saturating_add(range.end)
    } else {
        range.end
    };
    let limit = to.saturating_sub(from).saturating_add(1);
    (limit > 0).then_some((from, limit))
}

/// The newest-first window `[start, end]` (non-negative, `end` inclusive) that holds the
/// oldest-first page `range_start..=range_end` of a list of `len`, as Redis's
/// `LRANGE -(end+1) -(start+1)` picks it; `None` when it is empty.
fn mirrored_window(range_start: i64, range_end: i64, len: i64) -> Option<(i64, i64)> {
    let at = |i: i64| if i < 0 { len + i } else { i };
    let start = at(range_end.saturating_add(1).saturating_neg()).max(0);
    let end = at(range_start.saturating_add(1).saturating_neg()).min(len - 1);
    (start <= end).then_some((start, end))
}

impl PostgresBackend {
    /// The `(child_key, <column>)` pairs `command` answers about `job_id`'s children, each
    /// column's text (`None`: SQL NULL) as `render` writes it.
    async fn child_texts(
        &self,
        command: SqlCommand,
        job_id: &JobId,
        column: &str,
        what: &'static str,
        render: fn(Option<String>) -> String,
    ) -> Result<Vec<(String, String)>> {
        let rows = self.keyed_rows(command, job_id.as_str(), what).await?;
        rows.iter()
            .map(|row| {
                let key: String = row.try_get("child_key").map_err(sql_error(what))?;
                let text: Option<String> = row.try_get(column).map_err(sql_error(what))?;
                Ok((key, render(text)))
            })
            .collect()
    }

    /// `is_job_in_wait`: a non-prioritized waiting job, in the paused "list" when `paused`
    /// (the queue is paused) or in the wait one otherwise.
    async fn in_wait(&self, job_id: &JobId, paused: bool) -> Result<bool> {
        const WHAT: &str = "is_job_in_wait";
        let query = self
            .job_at(job_id)
            .keyed(commands::IS_JOB_IN_WAIT)
            .bind(paused);
        let rows = self.rows(query, WHAT).await?;
        present(rows, WHAT)
    }

    /// How many jobs the `wait` or `active` "list" holds (paused or not), from `get_counts`.
    async fn list_len(&self, t: JobType) -> Result<i64> {
        const WHAT: &str = "get_counts";
        let rows = self.queue_rows(commands::GET_COUNTS, WHAT).await?;
        let row = one_row(rows, WHAT)?;
        let column = if codec::job_type_arg(t) == "active" {
            "active"
        } else {
            "waiting"
        };
        let len = count_column(&row, column, WHAT)?;
        Ok(i64::try_from(len).unwrap_or(i64::MAX))
    }

    /// `get_counts` for every type but a cut-off `delayed` (Node.js' lookup table).
    async fn plain_counts(&self, types: &[JobType]) -> Result<Vec<u64>> {
        const WHAT: &str = "get_counts";
        let rows = self.queue_rows(commands::GET_COUNTS, WHAT).await?;
        let row = one_row(rows, WHAT)?;
        let waiting = count_column(&row, "waiting", WHAT)?;
        types
            .iter()
            .map(|t| match codec::job_type_arg(*t) {
                // Pausing only sets the meta flag: the jobs stay waiting and count as waiting,
                // on a paused queue too (Node.js 6.7.6; 6.7.0 counted them as `paused`).
                "wait" => Ok(waiting),
                name @ ("active" | "completed" | "failed" | "delayed" | "prioritized"
                | "waiting-children") => count_column(&row, name, WHAT),
                _ => Ok(0),
            })
            .collect()
    }

    /// One page of one dependency list (`get_dependencies_page`; the cursor is an offset),
    /// with the next cursor: 0 once a page comes back short, as Node.js.
    async fn dependency_page(
        &self,
        job_id: &JobId,
        kind: DependencyKind,
        cursor: u64,
        count: u64,
    ) -> Result<(Vec<(String, Option<Value>)>, u64)> {
        const WHAT: &str = "get_dependencies_page";
        let query = wire::queries::get_dependencies_page(self.job_at(job_id), kind, cursor, count);
        let rows = self.rows(query, WHAT).await?;
        let page = rows
            .iter()
            .map(|row| dependency_row(row, WHAT))
            .collect::<Result<Vec<_>>>()?;
        let next = DependenciesQuery::next_offset(cursor, count, page.len());
        Ok((page, next))
    }

    /// Every entry of all four dependency lists (`get_dependencies`, Node.js'
    /// `getDependencies` without options).
    async fn all_dependencies(&self, job_id: &JobId) -> Result<Dependencies> {
        const WHAT: &str = "get_dependencies";
        let rows = self
            .keyed_rows(commands::GET_DEPENDENCIES, job_id.as_str(), WHAT)
            .await?;
        let (mut processed, mut unprocessed, mut ignored, mut failed) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for row in &rows {
            let status: String = row.try_get("status").map_err(sql_error(WHAT))?;
            let (key, value) = dependency_row(row, WHAT)?;
            match status.as_str() {
                "processed" => processed.push((key, json_text(value.as_ref()))),
                "pending" => unprocessed.push(key),
                "ignored" => ignored.push((key, reason_text(value.as_ref()))),
                "failed" => failed.push(key),
                _ => {}
            }
        }
        Ok(Dependencies {
            processed: Some((processed, 0)),
            unprocessed: Some((unprocessed, 0)),
            ignored: Some((ignored, 0)),
            failed: Some((failed, 0)),
        })
    }
}

impl Queries for PostgresBackend {
    /// `get_state`; a waiting job with a priority is `Prioritized`, no row is `None`.
    async fn get_state(&self, job_id: &JobId) -> Result<Option<JobState>> {
        const WHAT: &str = "get_state";
        let rows = self
            .keyed_rows(commands::GET_STATE, job_id.as_str(), WHAT)
            .await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let state = state_column(row, WHAT)?;
        let priority: i32 = row.try_get("priority").map_err(sql_error(WHAT))?;
        if state == "waiting" && priority > 0 {
            return Ok(Some(JobState::Prioritized));
        }
        state.parse().map(Some).map_err(|_| {
            sql_error(WHAT)(sqlx::Error::Decode(
                format!("unknown job state {state:?}").into(),
            ))
        })
    }

    /// `is_finished`: the return value as JSON text (`null` when none) or the failure reason.
    async fn is_finished(&self, job_id: &JobId) -> Result<FinishStatus> {
        const WHAT: &str = "is_finished";
        let rows = self
            .keyed_rows(commands::IS_FINISHED, job_id.as_str(), WHAT)
            .await?;
        let Some(row) = rows.first() else {
            return Ok(FinishStatus::Missing);
        };
        match state_column(row, WHAT)?.as_str() {
            "completed" => {
                let value: Option<Value> = row.try_get("return_value").map_err(sql_error(WHAT))?;
                Ok(FinishStatus::Completed(Some(json_text(value.as_ref()))))
            }
            "failed" => {
                let reason: Option<String> =
                    row.try_get("failed_reason").map_err(sql_error(WHAT))?;
                Ok(FinishStatus::Failed(Some(reason.unwrap_or_default())))
            }
            _ => Ok(FinishStatus::Pending),
        }
    }

    async fn is_maxed(&self) -> Result<bool> {
        const WHAT: &str = "is_maxed";
        let rows = self.queue_rows(commands::IS_MAXED, WHAT).await?;
        one_value(rows, "maxed", WHAT)
    }

    /// As Node.js' `isJobInState`: `waiting` is the wait or the paused "list"
    /// (`is_job_in_wait`), `prioritized` is `is_job_prioritized`, the physical states
    /// `is_job_in_state`.
    async fn is_job_in_state(&self, state: JobState, job_id: &JobId) -> Result<bool> {
        match state {
            JobState::Waiting => {
                Ok(self.in_wait(job_id, false).await? || self.in_wait(job_id, true).await?)
            }
            JobState::Prioritized => {
                const WHAT: &str = "is_job_prioritized";
                let rows = self
                    .keyed_rows(commands::IS_JOB_PRIORITIZED, job_id.as_str(), WHAT)
                    .await?;
                present(rows, WHAT)
            }
            physical => {
                const WHAT: &str = "is_job_in_state";
                let query = self
                    .job_at(job_id)
                    .keyed(commands::IS_JOB_IN_STATE)
                    .bind(physical.as_str());
                let rows = self.rows(query, WHAT).await?;
                present(rows, WHAT)
            }
        }
    }

    /// `get_job_data`; a row that cannot be read is `Error::JobDecode`.
    async fn get_job(&self, job_id: &JobId) -> Result<Option<Job>> {
        const WHAT: &str = "get_job_data";
        let rows = self
            .keyed_rows(commands::GET_JOB_DATA, job_id.as_str(), WHAT)
            .await?;
        match rows.first() {
            None => Ok(None),
            Some(row) => Ok(Some(job_from_row(row)?)),
        }
    }

    /// `get_deduplication_job_id` at the backend's now: an expired key reads as none.
    async fn get_deduplication_job_id(&self, deduplication_id: &str) -> Result<Option<JobId>> {
        const WHAT: &str = "get_deduplication_job_id";
        let query = self
            .keyed(commands::GET_DEDUPLICATION_JOB_ID, deduplication_id)
            .bind(self.now_ms());
        let rows = self.rows(query, WHAT).await?;
        match rows.first() {
            None => Ok(None),
            Some(row) => {
                let id: String = row.try_get("job_id").map_err(sql_error(WHAT))?;
                Ok(Some(JobId::from(id)))
            }
        }
    }

    /// `get_job_logs_count`, then `get_job_logs_asc` or `_desc` (index 0 the newest line)
    /// over the slice Node.js computes from the count.
    async fn get_job_logs(&self, job_id: &JobId, range: Range) -> Result<JobLogs> {
        const WHAT: &str = "get_job_logs";
        let rows = self
            .keyed_rows(commands::GET_JOB_LOGS_COUNT, job_id.as_str(), WHAT)
            .await?;
        let count = count_column(&one_row(rows, WHAT)?, "count", WHAT)?;
        let Some((offset, limit)) = log_window(to_i64(count), range) else {
            return Ok(JobLogs {
                logs: Vec::new(),
                count,
            });
        };
        let command = if range.asc {
            commands::GET_JOB_LOGS_ASC
        } else {
            commands::GET_JOB_LOGS_DESC
        };
        let query = self.job_at(job_id).keyed(command).bind(offset).bind(limit);
        let rows = self.rows(query, WHAT).await?;
        let logs = rows
            .iter()
            .map(|row| row.try_get::<String, _>("row").map_err(sql_error(WHAT)))
            .collect::<Result<_>>()?;
        Ok(JobLogs { logs, count })
    }

    /// `get_rate_limit_ttl`; `None` (0) lets the function use the queue's global `max`.
    /// Its -2 (no window) reads as zero.
    async fn get_rate_limit_ttl(&self, max_jobs: Option<u64>) -> Result<Duration> {
        const WHAT: &str = "get_rate_limit_ttl";
        let query = wire::queries::get_rate_limit_ttl(self.queue_name(), max_jobs, self.now_ms());
        let rows = self.rows(query, WHAT).await?;
        let ttl = count_column(&one_row(rows, WHAT)?, "ttl", WHAT)?;
        Ok(Duration::from_millis(ttl))
    }

    /// `get_counts`, read as Node.js' lookup (waiting jobs count as waiting whether or not the
    /// queue is paused); with `delayed_before`, the delayed count is `get_delayed_count`
    /// instead.
    async fn get_counts(&self, types: &[JobType], delayed_before: Option<u64>) -> Result<Vec<u64>> {
        const WHAT: &str = "get_delayed_count";
        let is_delayed = |t: &JobType| *t == JobType::State(JobState::Delayed);
        let Some(cutoff) = delayed_before.filter(|_| types.iter().any(is_delayed)) else {
            return self.plain_counts(types).await;
        };
        let query = wire::queries::get_delayed_count(self.queue_name(), cutoff);
        let rows = self.rows(query, WHAT).await?;
        let delayed = count_column(&one_row(rows, WHAT)?, "count", WHAT)?;
        let others: Vec<JobType> = types.iter().copied().filter(|t| !is_delayed(t)).collect();
        let mut other_counts = if others.is_empty() {
            Vec::new()
        } else {
            self.plain_counts(&others).await?
        }
        .into_iter();
        Ok(types
            .iter()
            .map(|t| {
                if is_delayed(t) {
                    delayed
                } else {
                    other_counts.next().unwrap_or(0)
                }
            })
            .collect())
    }

    async fn get_counts_per_priority(&self, priorities: &[u32]) -> Result<Vec<u64>> {
        const WHAT: &str = "get_counts_per_priority";
        let query = wire::queries::get_counts_per_priority(self.queue_name(), priorities);
        let rows = self.rows(query, WHAT).await?;
        rows.iter()
            .map(|row| count_column(row, "cnt", WHAT))
            .collect()
    }

    /// `get_range` per type, with Redis's order: newest first, or oldest first with `asc`.
    ///
    /// `wait` and `active` are lists on Redis, which Node.js reads oldest first as the mirrored
    /// window `LRANGE -(end+1) -(start+1)` turned around. Upstream's `get_range` always pages
    /// those two from the newest end (Node.js on PostgreSQL then turns the newest page around,
    /// so `getWaiting(0, 1, true)` gives the two newest jobs); we ask it for the mirrored window
    /// instead, so both stores answer alike. An id met twice is kept once, where first met.
    async fn get_ranges(&self, types: &[JobType], range: Range) -> Result<Vec<JobId>> {
        const WHAT: &str = "get_range";
        let mut merged = RangeIds::new(range);
        for t in types {
            let oldest_first = merged.reads_backwards(*t);
            let (start, end) = if oldest_first {
                let len = self.list_len(*t).await?;
                match mirrored_window(range.start, range.end, len) {
                    Some(window) => window,
                    None => continue,
                }
            } else {
                (range.start, range.end)
            };
            let query = wire::queries::get_range(self.queue_name(), *t, start, end, range.asc);
            let rows = self.rows(query, WHAT).await?;
            let list: Vec<String> = id_column(&rows, WHAT)?;
            merged.push(*t, list.into_iter().map(JobId::from));
        }
        Ok(merged.into_ids())
    }

    async fn get_dependency_counts(
        &self,
        job_id: &JobId,
        kinds: &[DependencyKind],
    ) -> Result<Vec<u64>> {
        const WHAT: &str = "get_dependency_counts";
        let rows = self
            .keyed_rows(commands::GET_DEPENDENCY_COUNTS, job_id.as_str(), WHAT)
            .await?;
        let row = one_row(rows, WHAT)?;
        kinds
            .iter()
            .map(|kind| count_column(&row, kind.as_str(), WHAT))
            .collect()
    }

    /// Node.js' `getDependencies`: with no list asked, every entry of all four lists
    /// (`get_dependencies`); else one `get_dependencies_page` per list asked, the cursor an
    /// offset, the next cursor 0 once a page comes back short. Processed values are JSON
    /// text, ignored reasons plain text.
    async fn get_dependencies(
        &self,
        job_id: &JobId,
        query: &DependenciesQuery,
    ) -> Result<Dependencies> {
        if query.lists.is_empty() {
            return self.all_dependencies(job_id).await;
        }
        let mut out = Dependencies::default();
        for &(kind, cursor, count) in &query.lists {
            let (page, next) = self.dependency_page(job_id, kind, cursor, count).await?;
            match kind {
                DependencyKind::Processed => out.processed = Some((texts(page, json_text), next)),
                DependencyKind::Ignored => out.ignored = Some((texts(page, reason_text), next)),
                DependencyKind::Unprocessed => out.unprocessed = Some((keys(page), next)),
                DependencyKind::Failed => out.failed = Some((keys(page), next)),
            }
        }
        Ok(out)
    }

    /// `get_processed_children_values`: child key and return value as (compact) JSON text.
    async fn get_processed_children_values(&self, job_id: &JobId) -> Result<Vec<(String, String)>> {
        const WHAT: &str = "get_processed_children_values";
        let command = commands::GET_PROCESSED_CHILDREN_VALUES;
        // PostgreSQL prints jsonb spaced (`{"v": 1}`); compact it as Node.js'
        // `JSON.stringify` (and `get_dependencies`) write it.
        let compact = |value: Option<String>| {
            value.map_or_else(
                || "null".to_owned(),
                |text| bullmq_core::json::js_view(&text).into_owned(),
            )
        };
        self.child_texts(command, job_id, "value", WHAT, compact)
            .await
    }

    /// `get_ignored_children_failures`: child key and failure reason.
    async fn get_ignored_children_failures(&self, job_id: &JobId) -> Result<Vec<(String, String)>> {
        const WHAT: &str = "get_ignored_children_failures";
        let command = commands::GET_IGNORED_CHILDREN_FAILURES;
        self.child_texts(command, job_id, "reason", WHAT, Option::unwrap_or_default)
            .await
    }

    /// `get_metrics`, data points `start..=end` (0 the newest, negative from the oldest).
    ///
    /// Node.js reports only the cumulative count (`prevTS`, `prevCount` as 0, `count` as the
    /// slice's length); here every column the command returns is kept, so `count` is the
    /// whole series' length as on Redis.
    async fn get_metrics(&self, kind: FinishedState, start: i64, end: i64) -> Result<Metrics> {
        const WHAT: &str = "get_metrics";
        let query = wire::queries::get_metrics(self.queue_name(), kind, start, end);
        let rows = self.rows(query, WHAT).await?;
        let row = one_row(rows, WHAT)?;
        let data: Vec<i64> = row.try_get("data").map_err(sql_error(WHAT))?;
        Ok(Metrics {
            data: data
                .into_iter()
                .map(|n| u64::try_from(n).unwrap_or(0))
                .collect(),
            count: count_column(&row, "num_points", WHAT)?,
            total: count_column(&row, "total", WHAT)?,
            prev_ts: count_column(&row, "prev_ts", WHAT)?,
            prev_count: count_column(&row, "prev_count", WHAT)?,
        })
    }

    /// `get_client_list` (named sessions of `pg_stat_activity`), keeping this queue's
    /// workers (`<queue>`, `<queue>:w:<name>`) and `QueueEvents` (`<queue>:qe`). PostgreSQL
    /// reports only the name: no address, age or idle time.
    async fn get_client_list(&self) -> Result<Vec<ClientInfo>> {
        const WHAT: &str = "get_client_list";
        let rows = self
            .rows(wire::unbound(commands::GET_CLIENT_LIST), WHAT)
            .await?;
        let queue = self.queue_name();
        let base = client_name::worker(queue, None);
        let worker = format!("{base}:w:");
        let events = client_name::queue_events(queue);
        let mut clients = Vec::new();
        for row in &rows {
            let name: String = row.try_get("application_name").map_err(sql_error(WHAT))?;
            if name == base || name.starts_with(&worker) || name == events {
                clients.push(ClientInfo {
                    raw: vec![("name".to_owned(), name.clone())],
                    name,
                    ..ClientInfo::default()
                });
            }
        }
        Ok(clients)
    }

    /// `paginate_dependencies` over the processed (with their values as JSON text) or the
    /// unprocessed children, ordered by child key, with the children's rows when
    /// `fetch_jobs` (a child whose row is gone has none). Upstream pages only those two: the
    /// ignored and failed children are `Error::Unsupported`. The cursor is always 0.
    async fn paginate(
        &self,
        job_id: &JobId,
        kind: DependencyKind,
        start: u64,
        end: u64,
        fetch_jobs: bool,
    ) -> Result<Page> {
        const WHAT: &str = "paginate_dependencies";
        let with_value = match kind {
            DependencyKind::Processed => true,
            DependencyKind::Unprocessed => false,
            DependencyKind::Ignored | DependencyKind::Failed => {
                return Err(Error::Unsupported {
                    operation: "paginate",
                    backend: "postgres",
                });
            }
        };
        // `end` before `start` is an empty page (Node.js would send a negative LIMIT).
        let limit = (end != u64::MAX).then(|| to_i64(end.saturating_add(1).saturating_sub(start)));
        let query = wire::queries::paginate_dependencies(self.job_at(job_id), kind, start, limit);
        let rows = self.rows(query, WHAT).await?;
        let mut page = Page::default();
        if let Some(first) = rows.first() {
            page.total = count_column(first, "total", WHAT)?;
        }
        for row in &rows {
            let key: String = row.try_get("child_key").map_err(sql_error(WHAT))?;
            let value = if with_value {
                let value: Option<Value> = row.try_get("dep_value").map_err(sql_error(WHAT))?;
                Some(json_text(value.as_ref()))
            } else {
                None
            };
            page.items.push((key, value));
            if fetch_jobs {
                let id: Option<String> = row.try_get("id").map_err(sql_error(WHAT))?;
                // No row joined: the child is gone.
                if let Some(id) = id {
                    let read = job_from_row(row).map(Some).map_err(Into::into);
                    page.push_read(&JobId::from(id), read)?;
                }
            }
        }
        Ok(page)
    }

    /// One query of ours (`wire::queries::SCALING_SIGNALS`) at the backend's clock.
    async fn scaling_signals(&self) -> Result<ScalingSignals> {
        const WHAT: &str = "scaling_signals";
        let now_ms = self.now_ms();
        let query = wire::queries::scaling_signals(self.queue_name(), now_ms);
        let rows = self.rows(query, WHAT).await?;
        let row = one_row(rows, WHAT)?;
        let ms = |name: &str| -> Result<Option<u64>> {
            let v: Option<i64> = row.try_get(name).map_err(sql_error(WHAT))?;
            // A negative time (no runtime writes one) reads as the epoch.
            Ok(v.map(|v| u64::try_from(v).unwrap_or(0)))
        };
        Ok(ScalingSignals::from_observation(ScalingObservation {
            waiting: count_column(&row, "waiting", WHAT)?,
            prioritized: count_column(&row, "prioritized", WHAT)?,
            delayed_due: count_column(&row, "delayed_due", WHAT)?,
            active: count_column(&row, "active", WHAT)?,
            paused: row.try_get("paused").map_err(sql_error(WHAT))?,
            oldest_ready_timestamp: ms("oldest_ready_ms")?,
            earliest_due: ms("earliest_due_ms")?,
            now_ms: u64::try_from(now_ms).unwrap_or(0),
        }))
    }
}

#[cfg(test)]
mod tests {
    use bullmq_core::backend::Range;
    use serde_json::json;

    use super::{json_text, log_window, mirrored_window, reason_text};

    #[test]
    fn log_windows_follow_node() {
        let r = |start, end| Range {
            start,
            end,
            asc: true,
        };
        assert_eq!(log_window(5, r(0, -1)), Some((0, 5)));
        assert_eq!(log_window(5, r(1, 2)), Some((1, 2)));
        assert_eq!(log_window(5, r(-2, -1)), Some((3, 2)));
        assert_eq!(log_window(5, r(-9, 0)), Some((0, 1)));
        assert_eq!(log_window(5, r(3, 1)), None);
        assert_eq!(log_window(0, r(0, -1)), None);
    }

    #[test]
    fn stored_values_read_as_redis_keeps_them() {
        assert_eq!(json_text(Some(&json!({"a": 1}))), r#"{"a":1}"#);
        assert_eq!(json_text(None), "null");
        assert_eq!(reason_text(Some(&json!("boom"))), "boom");
        assert_eq!(reason_text(Some(&json!(3))), "3");
        assert_eq!(reason_text(None), "");
    }

    #[test]
    fn oldest_first_pages_mirror_the_newest_first_list() {
        // 25 jobs, newest first at index 0: the two oldest are at 23 and 24.
        assert_eq!(mirrored_window(0, 1, 25), Some((23, 24)));
        assert_eq!(mirrored_window(0, -1, 25), Some((0, 24)));
        assert_eq!(mirrored_window(5, -1, 25), Some((0, 19)));
        assert_eq!(mirrored_window(0, 99, 25), Some((0, 24)));
        assert_eq!(mirrored_window(30, 40, 25), None);
        assert_eq!(mirrored_window(0, -1, 0), None);
    }
}
