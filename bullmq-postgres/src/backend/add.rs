//! `AddJobs` for PostgreSQL: upstream's `add_job`, `add_jobs_bulk` and `add_flow` commands,
//! with the parameters Node.js's `PostgresQueueBackend` builds (`addJob`, `addJobs`,
//! `toBatchEntry`, `addFlow`).
//!
//! Jobs are stored as Node.js stores them: `data` is the job's JSON text, `opts` the long-key
//! options JSON, and the routing columns (priority, delay, attempts, parent, deduplication id,
//! scheduler id, LIFO) are read from the options as Node.js reads them. On PostgreSQL a
//! parent's "queue key" is the bare queue name and a job key is `<queue>:<id>`.

use bullmq_core::backend::{AddJobs, FlowNode, NewJob, ParentKeyOpts};
use bullmq_core::codec::{self, KeyStyle};
use bullmq_core::error::{AddedJob, BulkAddError, RefusedJob};
use bullmq_core::{Job, JobId, Result, ScriptError, ScriptErrorCode};
use serde::Serialize;
use sqlx::postgres::PgRow;

use super::{
    PostgresBackend, id_column, millis, one_value, refusal, refusal_code, sql_error, to_i64,
    unexpected,
};
use crate::lanes::{Lane, Lanes};
use crate::sql::commands;

/// Node.js's name for the add commands in its refusals.
const ADD_JOB: &str = "addJob";

/// An integer option Node.js passes through as stored, typed or kept raw in `extra`.
fn raw_int(job: &Job, key: &str) -> Option<i64> {
    job.opts.extra.get(key).and_then(serde_json::Value::as_i64)
}

/// `job.priority ?? opts.priority ?? 0`, as SQL's `integer` (saturating).
fn priority(job: &Job) -> i32 {
    let p = job
        .opts
        .priority
        .map(i64::from)
        .or_else(|| raw_int(job, "priority"))
        .unwrap_or(job.priority);
    i32::try_from(p).unwrap_or(if p < 0 { i32::MIN } else { i32::MAX })
}

/// `job.delay ?? opts.delay ?? 0`, in ms.
fn delay(job: &Job) -> i64 {
    job.opts
        .delay
        .map(millis)
        .or_else(|| raw_int(job, "delay"))
        .unwrap_or_else(|| millis(job.delay))
}

/// `opts.attempts ?? 1`: Node.js's jobs carry `attempts: 0` unless set, so most rows store 0.
fn max_attempts(job: &Job) -> i32 {
    job.opts
        .attempts
        .map(i64::from)
        .or_else(|| raw_int(job, "attempts"))
        .map_or(1, |a| i32::try_from(a).unwrap_or(i32::MAX))
}

/// The long-key options JSON; a job whose delay is not in its options gets it added, as
/// Node.js does for a job that carries its own `delay`.
fn opts_value(job: &Job) -> serde_json::Value {
    let mut opts = codec::options_to_value(&job.opts, KeyStyle::Long);
    if let serde_json::Value::Object(map) = &mut opts
        && job.opts.delay.is_none()
        && !job.delay.is_zero()
    {
        map.entry("delay")
            .or_insert_with(|| millis(job.delay).into());
    }
    opts
}

/// The job's data as JSON text (`'{}'` for none).
fn data(job: &Job) -> &str {
    if job.data.is_empty() { "{}" } else { &job.data }
}

/// The parent key Node.js passes: the caller's, else the job's own.
fn parent_key<'a>(job: &'a Job, parent: &'a ParentKeyOpts) -> Option<&'a str> {
    parent.parent_key.as_deref().or(job.parent_key.as_deref())
}

/// A job id that was asked for, or none (the store generates it).
fn asked_id(job: &Job) -> Option<String> {
    Some(job.id.as_str())
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// The refusal of adding `job`, as Node.js's: it names the parent, not the state.
fn add_refusal(code: ScriptErrorCode, job: &Job, parent_key: Option<&str>) -> ScriptError {
    ScriptError {
        code,
        command: ADD_JOB,
        job_id: asked_id(job),
        parent_key: parent_key.map(str::to_owned),
        state: None,
    }
}

/// Runs upstream's `add_job` for `job` in `queue` on `executor` (the pool, a connection or a
/// caller's open transaction); returns the job's id, the existing one for a duplicate or a
/// deduplicated job. Refusals (missing parent, parent that cannot be replaced) come back as
/// Node.js's `addJob` errors.
pub(crate) async fn add_job_on<'e, E>(
    executor: E,
    queue: &str,
    job: &Job,
    parent: &ParentKeyOpts,
) -> Result<JobId>
where
    E: sqlx::PgExecutor<'e>,
{
    let parent_key = parent_key(job, parent);
    let opts =
        bullmq_core::json::to_string(&opts_value(job)).map_err(|e| codec::CodecError::Encode {
            what: "job options",
            reason: e.to_string(),
        })?;
    // Both JSON parameters are cast to jsonb by the command, so they travel as text.
    let rows = sqlx::query(commands::ADD_JOB.text)
        .bind(queue)
        .bind(job.id.as_str())
        .bind(&job.name)
        .bind(data(job))
        .bind(opts)
        .bind(priority(job))
        .bind(delay(job))
        .bind(to_i64(job.timestamp))
        .bind(max_attempts(job))
        .bind(job.parent.as_ref().map(|p| p.queue_key.as_str()))
        .bind(job.parent.as_ref().and_then(|p| p.id.as_deref()))
        .bind(parent_key)
        .bind(job.deduplication_id.as_deref())
        .bind(job.repeat_job_key.as_deref())
        .bind(job.opts.lifo.unwrap_or(false))
        .fetch_all(executor)
        .await
        .map_err(|err| match refusal_code(&err) {
            Some(code) => add_refusal(code, job, parent_key).into(),
            None => sql_error(ADD_JOB)(err),
        })?;
    let id: String = one_value(rows, "id", ADD_JOB)?;
    Ok(JobId::from(id))
}

/// One entry of the JSON batch `add_jobs_bulk` and `add_flow` read (Node.js's
/// `toBatchEntry`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchEntry<'a> {
    queue: &'a str,
    id: &'a str,
    name: &'a str,
    /// JSON text, which the SQL casts to jsonb.
    data: &'a str,
    opts: serde_json::Value,
    priority: i32,
    delay: i64,
    timestamp: i64,
    attempts: i32,
    parent_queue: Option<&'a str>,
    parent_id: Option<&'a str>,
    parent_key: Option<&'a str>,
    dedup_id: Option<&'a str>,
    scheduler_id: Option<&'a str>,
    lifo: bool,
    add_to_waiting_children: bool,
}

impl<'a> BatchEntry<'a> {
    fn new(queue: &'a str, job: &'a Job, parent: &'a ParentKeyOpts) -> Self {
        Self {
            queue,
            id: job.id.as_str(),
            name: &job.name,
            data: data(job),
            opts: opts_value(job),
            priority: priority(job),
            delay: delay(job),
            timestamp: to_i64(job.timestamp),
            attempts: max_attempts(job),
            parent_queue: job.parent.as_ref().map(|p| p.queue_key.as_str()),
            parent_id: job.parent.as_ref().and_then(|p| p.id.as_deref()),
            parent_key: parent_key(job, parent),
            dedup_id: job.deduplication_id.as_deref(),
            scheduler_id: job.repeat_job_key.as_deref(),
            lifo: job.opts.lifo.unwrap_or(false),
            add_to_waiting_children: parent.add_to_waiting_children,
        }
    }

    /// No parent, no deduplication, not a parent itself: fit for `add_jobs_bulk`.
    fn independent(&self) -> bool {
        self.parent_id.is_none()
            && self.parent_queue.is_none()
            && self.dedup_id.is_none()
            && !self.add_to_waiting_children
    }
}

/// The batch as the JSON text the commands cast to jsonb.
fn batch_json(entries: &[BatchEntry<'_>]) -> Result<String> {
    bullmq_core::json::to_string(entries).map_err(|e| {
        codec::CodecError::Encode {
            what: "job batch",
            reason: e.to_string(),
        }
        .into()
    })
}

/// `add_flow` answers a refused node's id as a negative code (`-5` missing parent, `-7`
/// parent cannot be replaced), as Node.js reads it.
fn negative_code(id: &str) -> Option<i64> {
    id.parse::<i64>().ok().filter(|code| *code < 0)
}

/// The refusal of one node that `add_flow` answered `code` for.
fn node_refusal(
    code: i64,
    job: &Job,
    parent: &ParentKeyOpts,
) -> std::result::Result<ScriptError, bullmq_core::Error> {
    match ScriptErrorCode::try_from(code) {
        Ok(code) => Ok(add_refusal(code, job, parent_key(job, parent))),
        Err(_) => Err(unexpected(
            "addFlow",
            format!("add_flow answered the unknown code {code}"),
        )),
    }
}

/// One outcome per entry (`what` names them), in input order, from the ids `command`
/// answered: an entry refused by `add_flow` has its negative code for id. Read lazily, so
/// that a caller stopping at the first refusal reads no further.
fn outcomes<'a>(
    rows: &[PgRow],
    command: &'static str,
    what: &str,
    entries: impl ExactSizeIterator<Item = &'a NewJob> + 'a,
) -> Result<impl Iterator<Item = Result<Result<JobId, ScriptError>>> + 'a> {
    let ids: Vec<String> = id_column(rows, command)?;
    if ids.len() != entries.len() {
        return Err(unexpected(
            command,
            format!("{} ids for {} {what}", ids.len(), entries.len()),
        ));
    }
    Ok(ids
        .into_iter()
        .zip(entries)
        .map(|(id, entry)| match negative_code(&id) {
            Some(code) => Ok(Err(node_refusal(code, &entry.job, &entry.parent)?)),
            None => Ok(Ok(JobId::from(id))),
        }))
}

/// Runs upstream's batch add for `jobs` in `queue` on `executor` (the pool, or a caller's
/// open transaction): one statement, so the whole batch becomes visible at once; ids in input
/// order.
///
/// A job refused inside the statement (a missing parent, a parent that cannot be replaced)
/// is skipped and the others are added, as Node.js's `add_flow` does: the error is then
/// [`Error::Bulk`](bullmq_core::Error::Bulk) naming both. A statement that fails writes
/// nothing: the error is a bulk error without an index (or, when the connection was lost
/// before the answer, with every job unknown: the statement may have committed).
pub(crate) async fn add_jobs_on<'e, E>(
    executor: E,
    queue: &str,
    jobs: &[NewJob],
) -> Result<Vec<JobId>>
where
    E: sqlx::PgExecutor<'e>,
{
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let entries: Vec<BatchEntry<'_>> = jobs
        .iter()
        .map(|j| BatchEntry::new(queue, &j.job, &j.parent))
        .collect();
    let payload = batch_json(&entries)?;
    // Independent jobs take the set-based insert, the rest the row-by-row flow engine.
    let command = "addJobs";
    let query = if entries.iter().all(BatchEntry::independent) {
        sqlx::query(commands::ADD_JOBS_BULK.text)
            .bind(queue)
            .bind(payload)
    } else {
        sqlx::query(commands::ADD_FLOW.text).bind(payload)
    };
    let total = jobs.len();
    let rows = match query.fetch_all(executor).await {
        Ok(rows) => rows,
        Err(err) => {
            let lost = matches!(
                err,
                sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::WorkerCrashed
            );
            let error = refusal(ADD_JOB, None)(err);
            return Err(if lost {
                BulkAddError::all_unknown(total, error)
            } else {
                BulkAddError::nothing_added(total, vec![RefusedJob { index: None, error }])
            }
            .into());
        }
    };
    // The statement has committed (or will, with the caller's transaction): an answer that
    // cannot be read leaves every job's outcome unknown.
    let read = match outcomes(&rows, command, "jobs", jobs.iter()) {
        Ok(read) => read,
        Err(error) => return Err(BulkAddError::all_unknown(total, error).into()),
    };
    // `add_flow` answers a refused job's id as its negative code; Node.js would take it for
    // the id, the Redis backend raises the refusal: so do we, naming what was added.
    let mut added = Vec::with_capacity(total);
    let mut refused = Vec::new();
    for (index, outcome) in read.enumerate() {
        match outcome {
            Ok(Ok(id)) => added.push(AddedJob { index, id }),
            Ok(Err(refusal)) => refused.push(RefusedJob {
                index: Some(index),
                error: refusal.into(),
            }),
            Err(error) => refused.push(RefusedJob {
                index: Some(index),
                error,
            }),
        }
    }
    if refused.is_empty() {
        return Ok(added.into_iter().map(|a| a.id).collect());
    }
    Err(BulkAddError {
        total,
        added,
        refused,
        unknown: None,
    }
    .into())
}

/// Runs upstream's `add_flow` for `nodes` on `executor` (the pool, or a caller's open
/// transaction): the whole tree in one statement; one outcome per node, in input order.
pub(crate) async fn add_flow_on<'e, E>(
    executor: E,
    nodes: &[FlowNode],
) -> Result<Vec<Result<JobId, ScriptError>>>
where
    E: sqlx::PgExecutor<'e>,
{
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    // Each entry names its own queue (the prefix means nothing on PostgreSQL: the schema
    // is the namespace), so a flow spans queues; parents come before their children.
    let entries: Vec<BatchEntry<'_>> = nodes
        .iter()
        .map(|n| BatchEntry::new(n.queue.as_str(), &n.entry.job, &n.entry.parent))
        .collect();
    let rows = match sqlx::query(commands::ADD_FLOW.text)
        .bind(batch_json(&entries)?)
        .fetch_all(executor)
        .await
    {
        Ok(rows) => rows,
        Err(err) => {
            // The statement is atomic: nothing was added, and Node.js reports the same
            // refusal for every node.
            let Some(code) = refusal_code(&err) else {
                return Err(sql_error("addFlow")(err));
            };
            return Ok(nodes
                .iter()
                .map(|n| {
                    let parent_key = parent_key(&n.entry.job, &n.entry.parent);
                    Err(add_refusal(code, &n.entry.job, parent_key))
                })
                .collect());
        }
    };
    outcomes(&rows, "addFlow", "nodes", nodes.iter().map(|n| &n.entry))?.collect()
}

/// Whether the connection an add ran on is fit for reuse: it added, or was refused (a bulk
/// whose answer came, whatever it said).
fn answered<T>(outcome: &Result<T>) -> bool {
    match outcome {
        Ok(_) | Err(bullmq_core::Error::Script(_)) => true,
        Err(bullmq_core::Error::Bulk(bulk)) => bulk.unknown.as_ref().is_none_or(|u| {
            u.error.backend_kind() != Some(bullmq_core::BackendErrorKind::Connection)
        }),
        Err(_) => false,
    }
}

/// Gives `lane` back after an add, noting a connection lost: a failure of the statement
/// that is no refusal by the server.
fn settle<T>(lane: Lane<'_>, lanes: &Lanes, added: &Result<T>) {
    let answered = answered(added);
    match (answered, added) {
        (false, Err(e @ bullmq_core::Error::Backend(_))) => lanes.lost(e),
        (false, Err(bullmq_core::Error::Bulk(bulk))) => {
            if let Some(unknown) = &bulk.unknown {
                lanes.lost(&unknown.error);
            }
        }
        _ => {}
    }
    lane.give_back(answered);
}

impl AddJobs for PostgresBackend {
    async fn add_job(&self, job: &Job, parent: &ParentKeyOpts) -> Result<JobId> {
        let mut lane = self.lanes().checkout().await.map_err(sql_error(ADD_JOB))?;
        let added = add_job_on(lane.conn(), self.queue_name(), job, parent).await;
        settle(lane, self.lanes(), &added);
        added
    }

    async fn add_jobs(&self, jobs: &[NewJob]) -> Result<Vec<JobId>> {
        let mut lane = self
            .lanes()
            .checkout()
            .await
            .map_err(sql_error("addJobs"))?;
        let added = add_jobs_on(lane.conn(), self.queue_name(), jobs).await;
        settle(lane, self.lanes(), &added);
        added
    }

    async fn add_flow(&self, nodes: &[FlowNode]) -> Result<Vec<Result<JobId, ScriptError>>> {
        let mut lane = self
            .lanes()
            .checkout()
            .await
            .map_err(sql_error("addFlow"))?;
        let added = add_flow_on(lane.conn(), nodes).await;
        settle(lane, self.lanes(), &added);
        added
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles only if a caller's open transaction can run the add (the point of
    /// [`add_job_on`]); the behaviour is tested through `add_job` in `tests/backend_add.rs`.
    #[allow(dead_code)]
    async fn in_a_transaction(
        tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
        job: &Job,
    ) -> Result<JobId> {
        let parent = ParentKeyOpts::default();
        let first = add_job_on(&mut **tx, "q", job, &parent).await?;
        add_job_on(&mut **tx, "q", job, &parent).await?;
        Ok(first)
    }
}
