//! Finding a state's jobs by the search rule of [`bullmq::search::Needle`] (a JSON object or
//! array contained in the data; else the id, or a part of the name or of a value in the data,
//! ignoring case). PostgreSQL answers with one query over the whole state; Redis has no index
//! on data, so the library's bounded scan reads its jobs up to a bound, and the answer says
//! how many were read.

use bullmq::job::JobState;
use bullmq::postgres::JobSearch;
pub(crate) use bullmq::search::Needle;
use bullmq::search::ScanRequest;
use bullmq::{AnyBackend, JobId, Queue};

use crate::error::DashboardError;

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

/// The needle a query or form field asks for; `None` when absent or blank.
pub(crate) fn needle(text: Option<&str>) -> Option<Needle> {
    text.and_then(Needle::parse)
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
    if let AnyBackend::Postgres(pg) = queue.backend() {
        return postgres(pg, state, needle, asc, limit).await;
    }
    let request = ScanRequest {
        states: &[state],
        name: None,
        asc,
        limit,
        scan_limit: scan,
        from: None,
    };
    let found = bullmq::search::scan(queue, needle, &request).await?;
    let ids: Vec<JobId> = found.matches.into_iter().map(|m| m.id).collect();
    Ok(Found {
        complete: found.next.is_none() || ids.len() >= limit,
        more: found.next.is_some(),
        scanned: found.scanned,
        ids,
    })
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

/// One query over the state's rows, with the search rule as SQL.
async fn postgres(
    pg: &bullmq::postgres::PostgresBackend,
    state: JobState,
    needle: &Needle,
    asc: bool,
    limit: usize,
) -> Result<Found, DashboardError> {
    let order = if asc { "ASC" } else { "DESC" };
    let matching = JobSearch::of(needle, 3);
    let sql = format!(
        "SELECT id FROM job WHERE queue = $1 AND {} AND {} \
         ORDER BY added_at_ms {order}, seq {order} LIMIT $2",
        state_condition(state),
        matching.condition
    );
    let fetch = i64::try_from(limit).unwrap_or(i64::MAX).saturating_add(1);
    let mut query = sqlx::query_scalar(&sql)
        .bind(pg.queue().as_str())
        .bind(fetch);
    for value in &matching.binds {
        query = query.bind(value);
    }
    let mut ids: Vec<String> = query
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
