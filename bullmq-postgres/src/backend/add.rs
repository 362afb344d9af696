//! `AddJobs` for PostgreSQL: upstream's `add_job`, `add_jobs_bulk` and `add_flow` commands,
//! with the parameters Node.js's `PostgresQueueBackend` builds (see `crate::wire::add`), and
//! their answers read as Node.js reads them (refusals, a flow's per-node outcomes). On
//! PostgreSQL a parent's "queue key" is the bare queue name and a job key is `<queue>:<id>`.

use bullmq_core::backend::{AddJobs, FlowNode, NewJob, ParentKeyOpts};
use bullmq_core::error::{AddedJob, BulkAddError, RefusedJob};
use bullmq_core::{Job, JobId, Result, ScriptError, ScriptErrorCode};
use sqlx::postgres::PgRow;

use super::{PostgresBackend, id_column, one_value, refusal, refusal_code, sql_error, unexpected};
use crate::connection::Lanes;
use crate::wire::add as wire;

/// Node.js's name for the add commands in its refusals.
const ADD_JOB: &str = "addJob";

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
    let parent_key = wire::parent_key(job, parent);
    let rows = wire::add_job(queue, job, parent)?
        .fetch_all(executor)
        .await
        .map_err(|err| match refusal_code(&err) {
            Some(code) => add_refusal(code, job, parent_key).into(),
            None => sql_error(ADD_JOB)(err),
        })?;
    let id: String = one_value(rows, "id", ADD_JOB)?;
    Ok(JobId::from(id))
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
        Ok(code) => Ok(add_refusal(code, job, wire::parent_key(job, parent))),
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
    let command = "addJobs";
    let query = wire::add_jobs(queue, jobs)?;
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
    let rows = match wire::add_flow(nodes)?.fetch_all(executor).await {
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
                    let parent_key = wire::parent_key(&n.entry.job, &n.entry.parent);
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

/// Whether the connection an add ran on goes back to the lanes ([`answered`]); a failure
/// of the statement that is no refusal by the server is noted as the connection lost.
fn settled<T>(lanes: &Lanes, added: &Result<T>) -> bool {
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
    answered
}

impl AddJobs for PostgresBackend {
    async fn add_job(&self, job: &Job, parent: &ParentKeyOpts) -> Result<JobId> {
        let lanes = self.lanes();
        lanes
            .with_lane(
                ADD_JOB,
                async |conn| add_job_on(conn, self.queue_name(), job, parent).await,
                |added| settled(lanes, added),
            )
            .await
    }

    async fn add_jobs(&self, jobs: &[NewJob]) -> Result<Vec<JobId>> {
        let lanes = self.lanes();
        lanes
            .with_lane(
                "addJobs",
                async |conn| add_jobs_on(conn, self.queue_name(), jobs).await,
                |added| settled(lanes, added),
            )
            .await
    }

    async fn add_flow(&self, nodes: &[FlowNode]) -> Result<Vec<Result<JobId, ScriptError>>> {
        let lanes = self.lanes();
        lanes
            .with_lane(
                "addFlow",
                async |conn| add_flow_on(conn, nodes).await,
                |added| settled(lanes, added),
            )
            .await
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
