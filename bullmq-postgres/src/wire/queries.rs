//! The parameters of the `Queries` commands that Node.js's backend derives: dependency
//! statuses, pages and windows as SQL integers, the job types `get_range` reads, and the
//! scaling signals' own query. The commands that take only the queue, a job id and values as
//! given are bound with [`JobAt::keyed`] and [`queued`].

use bullmq_core::backend::{DependencyKind, SCALING_LOOKAHEAD};
use bullmq_core::codec;
use bullmq_core::job::{FinishedState, JobType};

use super::{JobAt, clamp_i32, queued, to_i32, to_i64};
use crate::connection::Query;
use crate::sql::commands;

/// The scaling signals (this crate's SQL, on upstream's schema; no upstream command reads
/// them). `$1` queue, `$2` now (Unix ms), `$3` how many jobs at the front of each ready
/// ordering to read the `added_at_ms` of. Each count is over one state's partial index
/// (`job_ready_idx`, `job_delayed_idx`, `job_active_idx`), so finished jobs are never read;
/// the two fronts are `LIMIT`ed walks of `job_ready_idx` in claim order (`priority, seq`),
/// and the earliest due time is the first entry of `job_delayed_idx`.
const SCALING_SIGNALS: &str = "SELECT
  (SELECT count(*) FROM job
    WHERE queue = $1 AND state = 'waiting' AND priority = 0) AS waiting,
  (SELECT count(*) FROM job
    WHERE queue = $1 AND state = 'waiting' AND priority > 0) AS prioritized,
  (SELECT count(*) FROM job
    WHERE queue = $1 AND state = 'delayed' AND process_at_ms <= $2) AS delayed_due,
  (SELECT count(*) FROM job WHERE queue = $1 AND state = 'active') AS active,
  EXISTS (SELECT 1 FROM meta
           WHERE queue = $1 AND field = 'paused' AND value = '1') AS paused,
  (SELECT min(front.added_at_ms) FROM (
     (SELECT added_at_ms FROM job
       WHERE queue = $1 AND state = 'waiting' AND priority = 0
       ORDER BY seq LIMIT $3)
     UNION ALL
     (SELECT added_at_ms FROM job
       WHERE queue = $1 AND state = 'waiting' AND priority > 0
       ORDER BY priority, seq LIMIT $3)
   ) front) AS oldest_ready_ms,
  (SELECT min(process_at_ms) FROM job
    WHERE queue = $1 AND state = 'delayed') AS earliest_due_ms";

/// The `dep_status` label of a dependency list.
fn dependency_status(kind: DependencyKind) -> &'static str {
    match kind {
        DependencyKind::Processed => "processed",
        DependencyKind::Unprocessed => "pending",
        DependencyKind::Ignored => "ignored",
        DependencyKind::Failed => "failed",
    }
}

/// `get_dependencies_page(queue, id, status, cursor, count)`.
pub(crate) fn get_dependencies_page<'q>(
    job: JobAt<'q>,
    kind: DependencyKind,
    cursor: u64,
    count: u64,
) -> Query<'q> {
    job.keyed(commands::GET_DEPENDENCIES_PAGE)
        .bind(dependency_status(kind))
        .bind(to_i64(cursor))
        .bind(to_i64(count))
}

/// `paginate_dependencies(queue, id, status, offset, limit)`; no limit reads to the end.
pub(crate) fn paginate_dependencies<'q>(
    job: JobAt<'q>,
    kind: DependencyKind,
    start: u64,
    limit: Option<i64>,
) -> Query<'q> {
    job.keyed(commands::PAGINATE_DEPENDENCIES)
        .bind(dependency_status(kind))
        .bind(to_i64(start))
        .bind(limit)
}

/// `get_rate_limit_ttl(queue, max jobs, now)`: no max is sent as 0.
pub(crate) fn get_rate_limit_ttl(queue: &str, max_jobs: Option<u64>, now: i64) -> Query<'_> {
    queued(commands::GET_RATE_LIMIT_TTL, queue)
        .bind(to_i32(max_jobs.unwrap_or(0)))
        .bind(now)
}

/// `get_delayed_count(queue, cutoff ms)`.
pub(crate) fn get_delayed_count(queue: &str, cutoff: u64) -> Query<'_> {
    queued(commands::GET_DELAYED_COUNT, queue).bind(to_i64(cutoff))
}

/// `get_counts_per_priority(queue, priorities bigint[])`.
pub(crate) fn get_counts_per_priority<'q>(queue: &'q str, priorities: &[u32]) -> Query<'q> {
    let priorities: Vec<i64> = priorities.iter().map(|p| i64::from(*p)).collect();
    queued(commands::GET_COUNTS_PER_PRIORITY, queue).bind(priorities)
}

/// `get_range(queue, job type, start, end, asc)`, the indexes clamped to `integer`.
pub(crate) fn get_range(
    queue: &str,
    job_type: JobType,
    start: i64,
    end: i64,
    asc: bool,
) -> Query<'_> {
    queued(commands::GET_RANGE, queue)
        .bind(codec::job_type_arg(job_type))
        .bind(clamp_i32(start))
        .bind(clamp_i32(end))
        .bind(asc)
}

/// `get_metrics(queue, kind, start, end)`, the indexes clamped to `integer`.
pub(crate) fn get_metrics(queue: &str, kind: FinishedState, start: i64, end: i64) -> Query<'_> {
    queued(commands::GET_METRICS, queue)
        .bind(kind.as_str())
        .bind(clamp_i32(start))
        .bind(clamp_i32(end))
}

/// [`SCALING_SIGNALS`] for `queue` at `now`, reading [`SCALING_LOOKAHEAD`] jobs of each front.
pub(crate) fn scaling_signals(queue: &str, now: i64) -> Query<'_> {
    sqlx::query(SCALING_SIGNALS)
        .bind(queue)
        .bind(now)
        .bind(i64::try_from(SCALING_LOOKAHEAD).unwrap_or(i64::MAX))
}
