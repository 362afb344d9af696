//! Jobs made, moved and read with upstream's own commands, run directly with the parameters
//! Node.js's `PostgresQueueBackend` passes (not through the backend under test), and the small
//! conversions the backend tests share.

use bullmq_core::{Error, JobId, ScriptError};
use bullmq_postgres::__private::sql::commands;
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx::{self, Row as _};
use serde_json::{Value, json};

/// Now, Unix ms.
pub(crate) fn now_ms() -> i64 {
    i64::try_from(bullmq_test_support::now_ms()).expect("ms fit i64")
}

/// A job id.
pub(crate) fn id(s: &str) -> JobId {
    JobId::from(s)
}

/// The script error inside `err`, or a panic naming what came instead.
pub(crate) fn script_error(err: Error) -> ScriptError {
    match err {
        Error::Script(e) => e,
        other => panic!("expected a script error, got {other:?}"),
    }
}

/// The script refusal `result` must hold, checked to carry `code`.
#[track_caller]
pub(crate) fn refused<T: std::fmt::Debug>(
    result: Result<T, Error>,
    code: bullmq_core::ScriptErrorCode,
) -> ScriptError {
    let err = script_error(result.expect_err("a script refusal"));
    assert_eq!(err.code, code, "{err:?}");
    err
}

/// A job to add with upstream's `add_job`. As Node.js's `addJob` does, the command's priority,
/// delay, attempts, lifo and deduplication id are read from the (long-key) options.
#[derive(Clone, Debug)]
pub(crate) struct AddJob<'a> {
    /// The id asked for; empty: the store numbers the job.
    pub id: &'a str,
    /// The job's name.
    pub name: &'a str,
    /// The job's data.
    pub data: Value,
    /// The job's options.
    pub opts: Value,
    /// When it was added, Unix ms.
    pub timestamp: i64,
    /// The parent, `(queue, id)`.
    pub parent: Option<(&'a str, &'a str)>,
    /// The job scheduler that made it.
    pub scheduler: Option<&'a str>,
}

impl<'a> AddJob<'a> {
    /// Job `id` named `test`, data `{"n":1}`, options `{"delay":0,"priority":0,"attempts":1}`,
    /// added now.
    pub(crate) fn new(id: &'a str) -> Self {
        Self {
            id,
            name: "test",
            data: json!({ "n": 1 }),
            opts: json!({ "delay": 0, "priority": 0, "attempts": 1 }),
            timestamp: now_ms(),
            parent: None,
            scheduler: None,
        }
    }

    /// Due `ms` after it is added.
    #[must_use]
    pub(crate) fn delay(mut self, ms: i64) -> Self {
        self.opts["delay"] = json!(ms);
        self
    }

    /// With priority `priority`.
    #[must_use]
    pub(crate) fn priority(mut self, priority: i32) -> Self {
        self.opts["priority"] = json!(priority);
        self
    }

    /// Made by the job scheduler `scheduler`.
    #[must_use]
    pub(crate) fn scheduler(mut self, scheduler: &'a str) -> Self {
        self.scheduler = Some(scheduler);
        self
    }

    /// Added at `timestamp` (Unix ms).
    #[must_use]
    pub(crate) fn at(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// Runs `add_job` in `b`'s queue; the job's id.
    pub(crate) async fn add(&self, b: &PostgresBackend) -> String {
        let opts = &self.opts;
        let int = |k: &str| opts.get(k).and_then(Value::as_i64);
        let dedup = opts.pointer("/deduplication/id").and_then(Value::as_str);
        let parent_key = self.parent.map(|(q, id)| format!("{q}:{id}"));
        sqlx::query_scalar(commands::ADD_JOB.text)
            .bind(b.queue().as_str())
            .bind(self.id)
            .bind(self.name)
            .bind(self.data.to_string())
            .bind(opts.to_string())
            .bind(i32::try_from(int("priority").unwrap_or(0)).expect("priority"))
            .bind(int("delay").unwrap_or(0))
            .bind(self.timestamp)
            .bind(i32::try_from(int("attempts").unwrap_or(1)).expect("attempts"))
            .bind(self.parent.map(|(q, _)| q))
            .bind(self.parent.map(|(_, id)| id))
            .bind(parent_key)
            .bind(dedup)
            .bind(self.scheduler)
            .bind(opts.get("lifo").and_then(Value::as_bool).unwrap_or(false))
            .fetch_one(b.connection().pool())
            .await
            .expect("add_job")
    }
}

/// One `add_flow` entry, as Node.js's `toBatchEntry` builds it: job `id` of `queue` named
/// `flow` with data `{}` and no options, under `parent` (`(queue, id)`), waiting for its
/// children when `waits_for_children`.
pub(crate) fn flow_entry(
    queue: &str,
    id: &str,
    parent: Option<(&str, &str)>,
    waits_for_children: bool,
) -> Value {
    json!({
        "queue": queue,
        "id": id,
        "name": "flow",
        "data": "{}",
        "opts": {},
        "priority": 0,
        "delay": 0,
        "timestamp": now_ms(),
        "attempts": 1,
        "parentQueue": parent.map(|(pq, _)| pq),
        "parentId": parent.map(|(_, pid)| pid),
        "parentKey": parent.map(|(pq, pid)| format!("{pq}:{pid}")),
        "dedupId": null,
        "schedulerId": null,
        "lifo": false,
        "addToWaitingChildren": waits_for_children,
    })
}

/// Runs `add_flow` with `entries` (roots first, as Node.js orders them); the jobs' ids.
pub(crate) async fn add_flow(b: &PostgresBackend, entries: Vec<Value>) -> Vec<String> {
    sqlx::query_scalar(commands::ADD_FLOW.text)
        .bind(Value::Array(entries).to_string())
        .fetch_all(b.connection().pool())
        .await
        .expect("add_flow")
}

/// Claims the next job with upstream's `move_to_active` (a 30 s lock, now) for a worker named
/// `worker` whose limiter, if any, allows `limiter_max` jobs a second; the claimed job's id.
pub(crate) async fn move_to_active(
    b: &PostgresBackend,
    token: &str,
    worker: Option<&str>,
    limiter_max: Option<i32>,
) -> Option<String> {
    let rows = sqlx::query(commands::MOVE_TO_ACTIVE.text)
        .bind(b.queue().as_str())
        .bind(token)
        .bind(30_000_i64)
        .bind(now_ms())
        .bind(worker)
        .bind(limiter_max)
        .bind(limiter_max.map(|_| 1_000_i64))
        .fetch_all(b.connection().pool())
        .await
        .expect("move_to_active");
    rows.first().map(|r| r.get::<String, _>("id"))
}

/// Claims the next job as a worker named `w` with no limiter; the claimed job's id.
pub(crate) async fn activate(b: &PostgresBackend, token: &str) -> Option<String> {
    move_to_active(b, token, Some("w"), None).await
}

/// Runs a finishing command (`query`, its job's parameters bound) with what Node.js passes
/// last: the finish time `finished_on` and no retention limit.
async fn finish(
    b: &PostgresBackend,
    query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    finished_on: i64,
    command: &str,
) {
    query
        .bind(finished_on)
        .bind(false)
        .bind(None::<i64>)
        .bind(None::<i32>)
        .execute(b.connection().pool())
        .await
        .unwrap_or_else(|e| panic!("{command}: {e}"));
}

/// Completes active job `id` (held under `token`) with upstream's `move_to_completed`, with
/// `return_value` (JSON text) at `finished_on`, keeping it.
pub(crate) async fn complete(
    b: &PostgresBackend,
    id: &str,
    token: &str,
    return_value: &str,
    finished_on: i64,
) {
    let query = sqlx::query(commands::MOVE_TO_COMPLETED.text)
        .bind(b.queue().as_str())
        .bind(id)
        .bind(token)
        .bind(return_value);
    finish(b, query, finished_on, "move_to_completed").await;
}

/// Fails active job `id` (held under `token`) with upstream's `move_to_failed`, with `reason`
/// and `stacktrace` (JSON text) at `finished_on`, keeping it.
pub(crate) async fn fail(
    b: &PostgresBackend,
    id: &str,
    token: &str,
    reason: &str,
    stacktrace: Option<&str>,
    finished_on: i64,
) {
    let query = sqlx::query(commands::MOVE_TO_FAILED.text)
        .bind(b.queue().as_str())
        .bind(id)
        .bind(token)
        .bind(reason)
        .bind(stacktrace);
    finish(b, query, finished_on, "move_to_failed").await;
}

/// One column of a job's row in `b`'s queue (as text), `None` when the job does not exist.
pub(crate) async fn column(b: &PostgresBackend, id: &str, column: &str) -> Option<Option<String>> {
    sqlx::query_scalar(&format!(
        "SELECT {column}::text FROM job WHERE queue = $1 AND id = $2"
    ))
    .bind(b.queue().as_str())
    .bind(id)
    .fetch_optional(b.connection().pool())
    .await
    .expect("read a job column")
}

/// The job's state, if it exists.
pub(crate) async fn state(b: &PostgresBackend, id: &str) -> Option<String> {
    column(b, id, "state").await.flatten()
}
