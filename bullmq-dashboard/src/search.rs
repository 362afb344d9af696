//! Finding a state's jobs by id, name or a value in their data. PostgreSQL answers with one
//! jsonb query over the whole state; Redis has no index on data, so its jobs are read in
//! windows up to a bound, and the answer says how many were read.

use bullmq::backend::{Queries as _, Range};
use bullmq::job::{JobState, JobType};
use bullmq::{AnyBackend, JobId, Queue};
use serde_json::Value;

use crate::error::DashboardError;

/// Ids a Redis scan reads per store call.
const WINDOW: i64 = 200;

/// What a search found.
#[derive(Debug)]
pub(crate) struct Found {
    /// The matching ids, in the order asked for, at most the limit given.
    pub(crate) ids: Vec<JobId>,
    /// How many jobs of the state were looked at (all of them on PostgreSQL).
    pub(crate) scanned: u64,
    /// Whether every job of the state was looked at (or the limit was reached).
    pub(crate) complete: bool,
    /// Whether more matches exist past the limit (PostgreSQL) or may exist past the scan.
    pub(crate) more: bool,
}

/// The text searched for: an exact id, or a case-insensitive part of the name or of a value
/// (a string, number or boolean at any depth) in the data.
#[derive(Debug, Clone)]
pub(crate) struct Needle {
    raw: String,
    lower: String,
}

impl Needle {
    /// `text` trimmed; `None` when empty.
    pub(crate) fn new(text: Option<&str>) -> Option<Self> {
        let raw = text?.trim();
        (!raw.is_empty()).then(|| Self {
            raw: raw.to_owned(),
            lower: raw.to_lowercase(),
        })
    }

    /// The text as typed.
    pub(crate) fn as_str(&self) -> &str {
        &self.raw
    }

    /// Whether a job with this id, name and data (JSON text) matches.
    pub(crate) fn matches(&self, id: &str, name: &str, data: &str) -> bool {
        id == self.raw
            || name.to_lowercase().contains(&self.lower)
            || serde_json::from_str::<Value>(data).is_ok_and(|v| self.in_value(&v))
    }

    fn in_value(&self, value: &Value) -> bool {
        match value {
            Value::Null => false,
            Value::Bool(b) => b.to_string().contains(&self.lower),
            Value::Number(n) => n.to_string().contains(&self.lower),
            Value::String(s) => s.to_lowercase().contains(&self.lower),
            Value::Array(items) => items.iter().any(|v| self.in_value(v)),
            Value::Object(map) => map.values().any(|v| self.in_value(v)),
        }
    }
}

/// Up to `limit` jobs of `state` matching `needle`, newest first unless `asc`; Redis reads
/// at most `scan` jobs of the state.
pub(crate) async fn find(
    queue: &Queue<AnyBackend>,
    state: JobState,
    needle: &Needle,
    asc: bool,
    limit: usize,
    scan: u64,
) -> Result<Found, DashboardError> {
    match queue.backend() {
        AnyBackend::Postgres(pg) => postgres(pg, state, needle, asc, limit).await,
        _ => scan_jobs(queue, state, needle, asc, limit, scan).await,
    }
}

/// The state's jobs read window by window, each matched on its own; a job that cannot be
/// decoded is skipped (its id still matches exactly).
async fn scan_jobs(
    queue: &Queue<AnyBackend>,
    state: JobState,
    needle: &Needle,
    asc: bool,
    limit: usize,
    scan: u64,
) -> Result<Found, DashboardError> {
    let total = queue
        .get_job_count_by_types(&[JobType::State(state)])
        .await?;
    let bound = i64::try_from(scan.min(total)).unwrap_or(i64::MAX);
    let mut found = Found {
        ids: Vec::new(),
        scanned: 0,
        complete: false,
        more: false,
    };
    let mut start = 0;
    while start < bound && found.ids.len() < limit {
        let end = (start + WINDOW).min(bound) - 1;
        let ids = queue
            .backend()
            .get_ranges(&[JobType::State(state)], Range { start, end, asc })
            .await?;
        if ids.is_empty() {
            break;
        }
        for id in ids {
            found.scanned += 1;
            let hit = match queue.get_job(&id).await {
                Ok(Some(job)) => needle.matches(job.id.as_str(), &job.name, &job.data),
                Ok(None) => false,
                Err(_) => id.as_str() == needle.as_str(),
            };
            if hit {
                if found.ids.len() == limit {
                    found.more = true;
                    break;
                }
                found.ids.push(id);
            }
        }
        start = end + 1;
    }
    found.complete = found.scanned >= total || found.ids.len() >= limit;
    found.more |= !found.complete;
    Ok(found)
}

/// The `WHERE` condition that selects a state's jobs, as upstream's `get_range` does.
fn state_condition(state: JobState) -> &'static str {
    match state {
        JobState::Waiting => "state = 'waiting' AND priority = 0",
        JobState::Prioritized => "state = 'waiting' AND priority > 0",
        JobState::Delayed => "state = 'delayed'",
        JobState::Active => "state = 'active'",
        JobState::Completed => "state = 'completed'",
        JobState::Failed => "state = 'failed'",
        JobState::WaitingChildren => "state = 'waiting-children'",
    }
}

/// One query: the id, the name, or any scalar in the jsonb data (`jsonb_path_query` over
/// every member at any depth).
async fn postgres(
    pg: &bullmq::postgres::PostgresBackend,
    state: JobState,
    needle: &Needle,
    asc: bool,
    limit: usize,
) -> Result<Found, DashboardError> {
    let order = if asc { "ASC" } else { "DESC" };
    let sql = format!(
        "SELECT id FROM job WHERE queue = $1 AND {} AND (id = $2 \
         OR strpos(lower(name), $3) > 0 \
         OR EXISTS (SELECT 1 FROM jsonb_path_query(data, 'strict $.**') AS v \
                    WHERE jsonb_typeof(v) IN ('string', 'number', 'boolean') \
                      AND strpos(lower(v #>> '{{}}'), $3) > 0)) \
         ORDER BY added_at_ms {order}, seq {order} LIMIT $4",
        state_condition(state)
    );
    let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
    let mut ids: Vec<String> = sqlx::query_scalar(&sql)
        .bind(pg.queue().as_str())
        .bind(needle.as_str())
        .bind(&needle.lower)
        .bind(fetch)
        .fetch_all(pg.connection().pool())
        .await
        .map_err(|e| DashboardError::Search(e.to_string()))?;
    let more = ids.len() > limit;
    ids.truncate(limit);
    Ok(Found {
        scanned: 0,
        complete: true,
        more,
        ids: ids.into_iter().map(JobId::from).collect(),
    })
}
