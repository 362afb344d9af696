//! bull-board against our queues: a queue filled and processed by Rust, on Redis and on
//! PostgreSQL, read through bull-board's JSON API (`tests/bull-board/bull-board.mjs`, bull-board
//! over Node.js BullMQ 6.7.6's own Queue) gives the same counts, jobs and fields as a queue
//! Node.js filled and processed the same way.
//!
//! Needs `npm ci --prefix tests/bull-board`; without it the test says so loudly and passes,
//! except in CI (`CI=true`), where it fails.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

use std::path::PathBuf;
use std::time::Duration;

use bullmq::job::{JobState, JobType};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{AnyBackend, JobError, JobOptions, Prefix, Queue, QueueName, Worker, WorkerOptions};
use bullmq_test_support::postgres::SchemaGuard;
use bullmq_test_support::{PrefixGuard, eventually, redis_url, unique_name};
use serde_json::Value;

fn board_dir() -> Option<PathBuf> {
    let dir = bullmq_test_support::workspace_dir().join("tests/bull-board");
    if dir.join("node_modules/@bull-board/api").exists() {
        return Some(dir);
    }
    let why = "tests/bull-board/node_modules is missing (npm ci --prefix tests/bull-board)";
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "the bull-board test cannot run in CI: {why}"
    );
    eprintln!("\n!!!!!!!!!! SKIPPED: the bull-board test did not run: {why} !!!!!!!!!!\n");
    None
}

/// Adds "ok" {"n":1} (completed with "done") and "fail-one" {"n":2} (failed with "boom"),
/// and processes them with a Rust worker.
async fn fill(name: &QueueName, backend: AnyBackend) {
    let queue =
        Queue::try_new(name.clone(), backend.clone()).expect("the backend is bound to this queue");
    queue
        .add("ok", &serde_json::json!({"n": 1}), JobOptions::default())
        .await
        .unwrap();
    queue
        .add(
            "fail-one",
            &serde_json::json!({"n": 2}),
            JobOptions::default(),
        )
        .await
        .unwrap();
    let worker = Worker::new(
        name.clone(),
        backend,
        WorkerOptions::default(),
        |job: bullmq::ActiveJob<AnyBackend>, _| async move {
            if job.name == "fail-one" {
                Err(JobError::failed("boom"))
            } else {
                Ok(serde_json::json!("done"))
            }
        },
    )
    .await
    .unwrap();
    let q = &queue;
    eventually(
        "both jobs to finish",
        Duration::from_secs(60),
        || async move {
            let counts = q
                .get_job_counts(&[
                    JobType::State(JobState::Completed),
                    JobType::State(JobState::Failed),
                ])
                .await
                .unwrap();
            counts.iter().all(|(_, n)| *n == 1)
        },
    )
    .await;
    worker.close().await;
}

/// The fields of a bull-board job that must agree between the two runtimes' jobs (times,
/// ids and worker names differ by nature; their presence and type are compared instead).
fn comparable(job: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for (key, value) in job.as_object().unwrap() {
        let kept = match key.as_str() {
            "id" | "timestamp" | "processedOn" | "finishedOn" | "processedBy" => {
                Value::String(format!("a {}", kind(value)))
            }
            // Stack frames name the runtime's files; their count must agree.
            "stacktrace" => Value::from(value.as_array().map_or(0, Vec::len)),
            _ => value.clone(),
        };
        out.insert(key.clone(), kept);
    }
    Value::Object(out)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(report: &Value) {
    eprintln!("bull-board: {report}");
    let (rust, node) = (&report["rust"], &report["node"]);
    assert_eq!(rust["counts"], node["counts"], "{report}");
    assert_eq!(rust["counts"]["completed"], 1, "{report}");
    assert_eq!(rust["counts"]["failed"], 1, "{report}");
    for list in ["completed", "failed"] {
        let (r, n) = (
            rust[list].as_array().unwrap(),
            node[list].as_array().unwrap(),
        );
        assert_eq!(r.len(), 1, "{list}: {report}");
        assert_eq!(
            comparable(&r[0]),
            comparable(&n[0]),
            "{list}: Rust's job (left) and Node's (right) as bull-board shows them"
        );
    }
    assert_eq!(rust["completed"][0]["returnValue"], "done");
    assert_eq!(rust["failed"][0]["failedReason"], "boom");
    assert_eq!(rust["failed"][0]["data"], serde_json::json!({"n": 2}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bull_board_reads_rust_queues_on_redis_as_node_ones() {
    let Some(dir) = board_dir() else { return };
    let prefix = PrefixGuard::new();
    let (rust_q, node_q) = (unique_name("bb-rust"), unique_name("bb-node"));
    let name = QueueName::new(rust_q.clone()).unwrap();
    let options = RedisOptions::new(redis_url()).prefix(Prefix::new(prefix.as_str()).unwrap());
    let backend: AnyBackend = RedisBackend::connect(&options, name.clone())
        .await
        .unwrap()
        .into();
    fill(&name, backend).await;
    let out = tokio::task::spawn_blocking(move || {
        bullmq_test_support::run_node_in(
            &dir,
            &["bull-board.mjs"],
            &[
                ("STORE", "redis"),
                ("PREFIX", prefix.as_str()),
                ("RUST_QUEUE", &rust_q),
                ("NODE_QUEUE", &node_q),
            ],
        )
    })
    .await
    .unwrap();
    check(&serde_json::from_str(out.trim()).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bull_board_reads_rust_queues_on_postgres_as_node_ones() {
    let Some(dir) = board_dir() else { return };
    let schema = SchemaGuard::new("bb");
    let (rust_q, node_q) = (unique_name("bb-rust"), unique_name("bb-node"));
    let name = QueueName::new(rust_q.clone()).unwrap();
    let backend: AnyBackend = schema.backend(&rust_q).await.into();
    fill(&name, backend).await;
    let schema_name = schema.as_str().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        bullmq_test_support::run_node_in(
            &dir,
            &["bull-board.mjs"],
            &[
                ("STORE", "postgres"),
                ("SCHEMA", &schema_name),
                ("RUST_QUEUE", &rust_q),
                ("NODE_QUEUE", &node_q),
            ],
        )
    })
    .await
    .unwrap();
    check(&serde_json::from_str(out.trim()).unwrap());
    drop(schema);
}
