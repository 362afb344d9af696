//! The parameters of upstream's `add_job`, `add_jobs_bulk` and `add_flow`, as Node.js's
//! `PostgresQueueBackend` builds them (`addJob`, `addJobs`, `toBatchEntry`, `addFlow`).
//!
//! Jobs are stored as Node.js stores them: `data` is the job's JSON text, `opts` the long-key
//! options JSON, and the routing columns (priority, delay, attempts, parent, deduplication id,
//! scheduler id, LIFO) are read from the options as Node.js reads them. Both JSON parameters
//! are cast to jsonb by the commands, so they travel as text.

use bullmq_core::backend::{FlowNode, NewJob, ParentKeyOpts};
use bullmq_core::codec::{self, KeyStyle};
use bullmq_core::{Job, Result};
use serde::Serialize;

use super::{millis, queued, to_i64};
use crate::connection::Query;
use crate::sql::commands;

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
pub(crate) fn parent_key<'a>(job: &'a Job, parent: &'a ParentKeyOpts) -> Option<&'a str> {
    parent.parent_key.as_deref().or(job.parent_key.as_deref())
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

/// `add_job(queue, id, name, data, opts, priority, delay, timestamp, attempts, parent queue,
/// parent id, parent key, deduplication id, scheduler id, lifo)` for `job` in `queue`.
pub(crate) fn add_job<'q>(
    queue: &'q str,
    job: &'q Job,
    parent: &'q ParentKeyOpts,
) -> Result<Query<'q>> {
    let opts =
        bullmq_core::json::to_string(&opts_value(job)).map_err(|e| codec::CodecError::Encode {
            what: "job options",
            reason: e.to_string(),
        })?;
    Ok(queued(commands::ADD_JOB, queue)
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
        .bind(parent_key(job, parent))
        .bind(job.deduplication_id.as_deref())
        .bind(job.repeat_job_key.as_deref())
        .bind(job.opts.lifo.unwrap_or(false)))
}

/// The batch add of `jobs` in `queue`: independent jobs take the set-based insert
/// (`add_jobs_bulk(queue, batch)`), the rest the row-by-row flow engine (`add_flow(batch)`).
pub(crate) fn add_jobs<'q>(queue: &'q str, jobs: &'q [NewJob]) -> Result<Query<'q>> {
    let entries: Vec<BatchEntry<'_>> = jobs
        .iter()
        .map(|j| BatchEntry::new(queue, &j.job, &j.parent))
        .collect();
    let payload = batch_json(&entries)?;
    Ok(if entries.iter().all(BatchEntry::independent) {
        queued(commands::ADD_JOBS_BULK, queue).bind(payload)
    } else {
        sqlx::query(commands::ADD_FLOW.text).bind(payload)
    })
}

/// `add_flow(batch)` for `nodes`: each entry names its own queue (the prefix means nothing on
/// PostgreSQL: the schema is the namespace), so a flow spans queues; parents come before
/// their children.
pub(crate) fn add_flow(nodes: &[FlowNode]) -> Result<Query<'static>> {
    let entries: Vec<BatchEntry<'_>> = nodes
        .iter()
        .map(|n| BatchEntry::new(n.queue.as_str(), &n.entry.job, &n.entry.parent))
        .collect();
    Ok(sqlx::query(commands::ADD_FLOW.text).bind(batch_json(&entries)?))
}
