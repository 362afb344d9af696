//! JSON as Node.js BullMQ 6.7.6 writes and reads it, on Redis and on PostgreSQL
//! (`tests/node/json-echo.mjs`): jobs whose data stress JSON (integer-like keys, nested
//! objects, floats JavaScript writes its own way, unicode, `null` data), added by Node.js, are
//! run by a Node.js echo worker on one queue and by a Rust echo worker on its twin. Each
//! worker returns `{"echo": <data as read>, "seen": <the data's text as the processor got it>}`,
//! so the stored return values show both what the processor saw (key order included) and how
//! it was written back. A job Rust adds with raw JSON text out of JavaScript's order and
//! notation runs on both queues too.
//!
//! The stored return values must be the same bytes (Redis) or the same `jsonb` (PostgreSQL),
//! and Node's getters must read the same data and return values from both queues. On
//! PostgreSQL, Rust's getters must read what Node's read, `null` data as `{}` included. Data
//! Rust adds is stored as Node stores the same object (Redis bytes, PostgreSQL `jsonb` text).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::time::Duration;

use bullmq::backend::Backend;
use bullmq::job::{JobState, JobType};
use bullmq::postgres::{PostgresBackend, sqlx};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, CancellationToken, JobId, JobOptions, Prefix, ProcessResult, Queue, QueueName,
    Worker, WorkerOptions,
};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::support::postgres::{SchemaGuard, database_url};
use crate::support::wait::eventually;

const WAIT: Duration = Duration::from_secs(20);

/// The corpus' job ids (`tests/node/json-echo.mjs`), `e5` being the one with `null` data.
const CORPUS: usize = 10;

/// The job Rust adds to both queues: keys out of JavaScript's order, floats in notations
/// JavaScript does not write, whitespace.
const RAW_ID: &str = "r0";
const RAW_DATA: &str = r#"{"b": 1.0, "10": [1e1, 0.0000001, -0.0], "2": {"z": 0, "1": 1}}"#;

/// What the Rust worker returns: any `Serialize` type.
#[derive(serde::Serialize)]
struct Echo {
    echo: Value,
    seen: String,
}

async fn echo<B>(job: ActiveJob<B>, _cancel: CancellationToken) -> ProcessResult<Echo> {
    Ok(Echo {
        echo: job.data_as()?,
        seen: job.data.clone(),
    })
}

fn ids() -> Vec<String> {
    (0..CORPUS)
        .map(|i| format!("e{i}"))
        .chain([RAW_ID.to_owned()])
        .collect()
}

/// Runs `node json-echo.mjs` with `env` and `OP=op` off the async threads; its JSON output.
async fn node(env: &[(&'static str, String)], op: &str) -> Value {
    let mut env = env.to_vec();
    env.push(("OP", op.to_owned()));
    env.push(("EXTRA_IDS", RAW_ID.to_owned()));
    let out = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        support::run_node("json-echo.mjs", &env)
    })
    .await
    .unwrap();
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("node printed {out:?}: {e}"))
}

/// The two queues' runs: Node adds the corpus to both and Rust its raw job; Node's worker runs
/// `node_q`, Rust's `rust_q`. Returns Node's view of each queue.
async fn run_both<B: Backend>(
    node_env: impl Fn(&str) -> Vec<(&'static str, String)>,
    node_q: &Queue<B>,
    rust_q: &Queue<B>,
    worker_backend: B,
) -> (Value, Value) {
    for queue in [node_q, rust_q] {
        let env = node_env(queue.name().as_str());
        node(&env, "add").await;
        let raw = RawValue::from_string(RAW_DATA.to_owned()).unwrap();
        queue
            .add("echo", &raw, JobOptions::new().job_id(RAW_ID))
            .await
            .unwrap();
    }
    node(&node_env(node_q.name().as_str()), "work").await;

    let worker = Worker::new(
        rust_q.name().clone(),
        worker_backend,
        WorkerOptions::new().drain_delay(Duration::from_millis(500)),
        echo::<B>,
    )
    .await
    .unwrap();
    eventually("the Rust worker to complete every job", WAIT, || async {
        let counts = rust_q
            .get_job_counts(&[JobType::State(JobState::Completed)])
            .await
            .unwrap();
        counts[0].1 == ids().len() as u64
    })
    .await;
    worker.close().await;

    let node_view = node(&node_env(node_q.name().as_str()), "view").await;
    let rust_view = node(&node_env(rust_q.name().as_str()), "view").await;
    (node_view, rust_view)
}

/// Node's view of both queues is the same, job by job.
/// Field `field` of the hash at `key`, if it has one.
async fn field(
    con: &mut redis::aio::MultiplexedConnection,
    key: &str,
    field: &str,
) -> Option<String> {
    redis::cmd("HGET")
        .arg(key)
        .arg(field)
        .query_async(con)
        .await
        .unwrap()
}

fn assert_same_views(node_view: &Value, rust_view: &Value) {
    for id in ids() {
        assert_eq!(
            node_view[&id], rust_view[&id],
            "job {id}: Node's view of what Node's worker left (left) and of Rust's (right)"
        );
    }
}

/// `view`'s field `field` (a JSON text) of job `id`.
fn viewed<'v>(view: &'v Value, id: &str, field: &str) -> &'v str {
    view[id][field]
        .as_str()
        .unwrap_or_else(|| panic!("{id}.{field} in {view}"))
}

#[tokio::test]
async fn redis_rust_worker_echoes_node_data_as_a_node_worker_does() {
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    let options = RedisOptions::new(support::redis_url()).prefix(Prefix::new(&prefix).unwrap());
    let connect = |name: &str| {
        let options = options.clone();
        let name = QueueName::new(name).unwrap();
        async move { RedisBackend::connect(&options, name).await.unwrap() }
    };
    let node_q = Queue::try_new(
        QueueName::new("node-echo").unwrap(),
        connect("node-echo").await,
    )
    .expect("the backend is bound to this queue");
    let rust_q = Queue::try_new(
        QueueName::new("rust-echo").unwrap(),
        connect("rust-echo").await,
    )
    .expect("the backend is bound to this queue");
    let env = |queue: &str| {
        vec![
            ("BACKEND", "redis".to_owned()),
            ("PREFIX", prefix.clone()),
            ("QUEUE", queue.to_owned()),
        ]
    };
    let (node_view, rust_view) = run_both(env, &node_q, &rust_q, connect("rust-echo").await).await;

    let mut con = support::redis().await;
    for id in ids() {
        let mut stored = Vec::new();
        for queue in ["node-echo", "rust-echo"] {
            stored.push(field(&mut con, &format!("{prefix}:{queue}:{id}"), "returnvalue").await);
        }
        assert!(stored[0].is_some(), "job {id}: no return value from Node");
        assert_eq!(
            stored[0], stored[1],
            "job {id}: returnvalue bytes, Node (left), Rust (right)"
        );
    }
    assert_same_views(&node_view, &rust_view);

    // Data Rust writes is the bytes Node writes for the same object: keys in JavaScript's
    // order whatever order Rust holds them in, numbers in JavaScript's notation.
    let writes = Queue::try_new(QueueName::new("writes").unwrap(), connect("writes").await)
        .expect("the backend is bound to this queue");
    let e0 = serde_json::json!({"b": 1, "10": "ten", "a": 2, "9": "nine", "0": "zero",
        "01": "not an index", "4294967295": "too big"});
    let e2 = serde_json::json!({"big": 1e20, "tiny": 1e-7, "sum": 0.1 + 0.2, "huge": 1e21,
        "neg": -0.0, "half": 0.5, "max": f64::MAX});
    for (id, data) in [("e0", e0), ("e2", e2)] {
        writes
            .add("echo", &data, JobOptions::new().job_id(id))
            .await
            .unwrap();
        let mut stored = Vec::new();
        for queue in ["node-echo", "writes"] {
            let data = field(&mut con, &format!("{prefix}:{queue}:{id}"), "data").await;
            stored.push(data.expect("the job has data"));
        }
        assert_eq!(
            stored[0], stored[1],
            "{id}: data Node wrote (left), Rust (right)"
        );
    }

    // Node's own bytes, for the cases the issue names.
    assert_eq!(
        viewed(&node_view, "e2", "data"),
        r#"{"big":100000000000000000000,"tiny":1e-7,"sum":0.30000000000000004,"huge":1e+21,"neg":0,"half":0.5,"max":1.7976931348623157e+308}"#
    );
    assert_eq!(
        viewed(&rust_view, RAW_ID, "returnvalue"),
        r#"{"echo":{"2":{"1":1,"z":0},"10":[10,1e-7,0],"b":1},"seen":"{\"2\":{\"1\":1,\"z\":0},\"10\":[10,1e-7,0],\"b\":1}"}"#
    );
}

/// The `return_value` column of each job of `queue`, as PostgreSQL prints it.
async fn stored_return_values(schema: &SchemaGuard, queue: &str) -> BTreeMap<String, String> {
    let mut con = support::postgres::connect(&database_url()).await.unwrap();
    let sql = format!(
        "SELECT id, return_value::text FROM {}.job WHERE queue = $1",
        schema.name().quoted()
    );
    sqlx::query_as::<_, (String, Option<String>)>(&sql)
        .bind(queue)
        .fetch_all(&mut con)
        .await
        .unwrap()
        .into_iter()
        .map(|(id, value)| (id, value.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn postgres_rust_worker_and_getters_see_node_data_as_node_does() {
    let schema = SchemaGuard::new("json_echo");
    let node_q: Queue<PostgresBackend> = schema.queue("node-echo").await;
    let rust_q: Queue<PostgresBackend> = schema.queue("rust-echo").await;
    let env = |queue: &str| {
        vec![
            ("BACKEND", "postgres".to_owned()),
            ("DATABASE_URL", database_url()),
            ("SCHEMA", schema.as_str().to_owned()),
            ("QUEUE", queue.to_owned()),
        ]
    };
    let (node_view, rust_view) =
        run_both(env, &node_q, &rust_q, schema.backend("rust-echo").await).await;

    let node_rows = stored_return_values(&schema, "node-echo").await;
    let rust_rows = stored_return_values(&schema, "rust-echo").await;
    assert_eq!(node_rows.len(), ids().len());
    assert_eq!(
        node_rows, rust_rows,
        "return_value, Node's worker (left), Rust's (right)"
    );
    assert_same_views(&node_view, &rust_view);

    // Rust's getters read what Node's read: data (`null` as `{}`) and return values.
    for queue in [&node_q, &rust_q] {
        for id in ids() {
            let job = queue
                .get_job(&JobId::from(id.as_str()))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(job.data, viewed(&node_view, &id, "data"), "{id}: data");
            assert_eq!(
                job.return_value.as_deref(),
                Some(viewed(&node_view, &id, "returnvalue")),
                "{id}: return value"
            );
        }
    }
    assert_eq!(viewed(&node_view, "e5", "data"), "{}");
    assert_eq!(
        viewed(&rust_view, "e5", "returnvalue"),
        r#"{"echo":{},"seen":"{}"}"#
    );
    // What a processor saw, as a string `jsonb` keeps as is: key order and number text.
    assert_eq!(
        viewed(&rust_view, "e0", "returnvalue"),
        viewed(&node_view, "e0", "returnvalue")
    );
}

/// The `data` and `progress` columns of job `id` in `queue`, as PostgreSQL prints them.
async fn stored_data(schema: &SchemaGuard, queue: &str, id: &str) -> (String, Option<String>) {
    let mut con = support::postgres::connect(&database_url()).await.unwrap();
    let sql = format!(
        "SELECT data::text, progress::text FROM {}.job WHERE queue = $1 AND id = $2",
        schema.name().quoted()
    );
    sqlx::query_as(&sql)
        .bind(queue)
        .bind(id)
        .fetch_one(&mut con)
        .await
        .unwrap()
}

/// `jsonb` keeps a number's scale (`1.0` stays `1.0`, `-0.0` stays `-0.0`), so what Rust sends
/// must already be JavaScript's text: the row Rust writes is the row Node writes.
#[tokio::test]
async fn postgres_rows_rust_writes_hold_javascripts_numbers() {
    let schema = SchemaGuard::new("json_numbers");
    let queue: Queue<PostgresBackend> = schema.queue("numbers").await;
    let data = serde_json::json!({"one": 1.0, "neg": -0.0, "tiny": 1e-7, "big": 1e21, "f": 0.5});
    let rust_id = queue.add("n", &data, JobOptions::new()).await.unwrap().id;
    queue
        .job(rust_id.clone())
        .update_progress(&serde_json::json!({"pct": 50.0, "sum": 0.1 + 0.2}))
        .await
        .unwrap();

    let env = [
        ("DATABASE_URL", database_url()),
        ("SCHEMA", schema.as_str().to_owned()),
        ("QUEUE", "numbers".to_owned()),
        ("OP", "add".to_owned()),
        (
            "JOB_DATA",
            r#"{"one":1.0,"neg":-0,"tiny":1e-7,"big":1e21,"f":0.5}"#.to_owned(),
        ),
    ];
    let out = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        support::run_node("pg-queue-op.mjs", &env)
    })
    .await
    .unwrap();
    let node: Value = serde_json::from_str(out.trim()).unwrap();
    let node_id = node["id"].as_str().unwrap();

    let (rust_data, progress) = stored_data(&schema, "numbers", rust_id.as_str()).await;
    let (node_data, _) = stored_data(&schema, "numbers", node_id).await;
    assert_eq!(
        rust_data, node_data,
        "data: Rust's row (left), Node's (right)"
    );
    assert_eq!(
        progress.as_deref(),
        Some(r#"{"pct": 50, "sum": 0.30000000000000004}"#)
    );
}

/// What the processor of the test below returns: raw text, or a map JSON cannot hold.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Answer {
    Raw(Box<RawValue>),
    Unkeyable(BTreeMap<(u8, u8), u8>),
}

/// A processor may return raw JSON text, stored as given (as `Queue::add` stores raw data);
/// a value that cannot be serialized fails its job with the reason, as Node.js fails a job
/// whose return value `JSON.stringify` rejects.
#[tokio::test]
async fn redis_raw_return_values_are_stored_as_given_and_bad_ones_fail_the_job() {
    const RAW: &str = r#"{"b": 1.0, "10": [2]}"#;
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    let options = RedisOptions::new(support::redis_url()).prefix(Prefix::new(&prefix).unwrap());
    let name = QueueName::new("raw").unwrap();
    let queue = Queue::try_new(
        name.clone(),
        RedisBackend::connect(&options, name.clone()).await.unwrap(),
    )
    .expect("the backend is bound to this queue");
    let raw = queue.add("raw", &(), JobOptions::new()).await.unwrap().id;
    let bad = queue.add("bad", &(), JobOptions::new()).await.unwrap().id;

    let worker = Worker::new(
        name.clone(),
        RedisBackend::connect(&options, name.clone()).await.unwrap(),
        WorkerOptions::new().drain_delay(Duration::from_millis(500)),
        |job: ActiveJob<RedisBackend>, _: CancellationToken| async move {
            Ok(if job.name == "bad" {
                Answer::Unkeyable([((1, 2), 3)].into())
            } else {
                Answer::Raw(RawValue::from_string(RAW.to_owned()).unwrap())
            })
        },
    )
    .await
    .unwrap();
    eventually("both jobs to finish", WAIT, || async {
        let counts = queue
            .get_job_counts(&[
                JobType::State(JobState::Completed),
                JobType::State(JobState::Failed),
            ])
            .await
            .unwrap();
        counts[0].1 == 1 && counts[1].1 == 1
    })
    .await;
    worker.close().await;

    let raw = queue.get_job(&raw).await.unwrap().unwrap();
    assert_eq!(raw.return_value.as_deref(), Some(RAW));
    let bad = queue.get_job(&bad).await.unwrap().unwrap();
    let reason = bad.failed_reason.unwrap();
    assert!(
        reason.starts_with("could not encode the return value: key must be a string"),
        "{reason}"
    );
}

/// A job scheduler's template upserted by Rust is stored as Node stores the same template:
/// the data's `jsonb` (numbers as JavaScript writes them) and the options' numbers.
#[cfg(feature = "scheduler")]
#[tokio::test]
async fn postgres_scheduler_templates_hold_javascripts_numbers() {
    use bullmq::Backoff;
    use bullmq::RepeatOptions;
    use bullmq::scheduler::{JobScheduler, JobTemplate};

    let schema = SchemaGuard::new("json_sched");
    let start = support::now_ms() + 3_600_000;
    let repeat = serde_json::json!({"every": 60_000, "startDate": start}).to_string();
    let template = r#"{"name":"t","data":{"b":1.0,"10":0.5,"9":1e21,"n":-0.0},
        "opts":{"attempts":2,"backoff":{"type":"fixed","delay":1000,"jitter":1.0}}}"#;
    let env = [
        ("DATABASE_URL", database_url()),
        ("SCHEMA", schema.as_str().to_owned()),
        ("QUEUE", "n".to_owned()),
    ];
    let args = ["pg-interop.mjs", "upsert", "s", repeat.as_str(), template].map(str::to_owned);
    tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        support::run_node_args(&args, &env)
    })
    .await
    .unwrap();

    let schedule = RepeatOptions::every(Duration::from_secs(60)).start_date(start);
    let data = serde_json::json!({"b": 1.0, "10": 0.5, "9": 1e21, "n": -0.0});
    let opts = JobOptions::new()
        .attempts(2)
        .backoff(Backoff::fixed(Duration::from_secs(1)).jitter(1.0));
    JobScheduler::new(schema.backend("r").await)
        .upsert(
            "s",
            &schedule,
            JobTemplate::named("t").data(&data).opts(opts),
        )
        .await
        .unwrap()
        .unwrap();

    let mut con = support::postgres::connect(&database_url()).await.unwrap();
    let sql = format!(
        "SELECT s.template_data::text, (s.template_opts -> 'backoff')::text, j.data::text \
         FROM {schema}.scheduler s JOIN {schema}.job j \
           ON j.queue = s.queue AND j.scheduler_id = s.scheduler_id \
         WHERE s.queue = $1",
        schema = schema.name().quoted()
    );
    let mut rows = Vec::new();
    for queue in ["n", "r"] {
        let row: (String, String, String) = sqlx::query_as(&sql)
            .bind(queue)
            .fetch_one(&mut con)
            .await
            .unwrap();
        rows.push(row);
    }
    assert_eq!(rows[0], rows[1], "Node's scheduler (left), Rust's (right)");
    assert!(
        rows[1].1.contains(r#""jitter": 1"#) && !rows[1].1.contains("1.0"),
        "{}",
        rows[1].1
    );
}
