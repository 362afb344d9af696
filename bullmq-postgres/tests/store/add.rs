//! Only what is PostgreSQL-specific; the shared cases are the conformance suite's `add.rs`.
//!
//! `AddJobs` on PostgreSQL: the rows upstream's `add_job`, `add_jobs_bulk` and `add_flow` write
//! for jobs added from Rust, compared with the rows Node.js BullMQ writes for the same input,
//! and the ids and refusals the trait answers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use crate::support::jobs::{refused, script_error};
use crate::support::{TestSchema, admin};
use bullmq_core::backend::{AddJobs, FlowNode, NewJob, ParentKeyOpts};
use bullmq_core::options::{Backoff, Deduplication, KeepJobs, ParentOptions};
use bullmq_core::{Error, Job, JobId, JobOptions, Prefix, QueueName, ScriptErrorCode};
use bullmq_postgres::sqlx;
use serde_json::{Value, json};

/// A fixed `timestamp` for both runtimes, so that their rows can be equal.
const T0: u64 = 1_700_000_000_000;

/// Runs `tests/node/pg-add-twin.mjs` (this crate's) with `op` and `spec` on `queue` of
/// `schema` (Node migrates it); the ids Node answered.
async fn node_twin(schema: &TestSchema, queue: &str, op: &str, spec: Value) -> Vec<Value> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("node")
        .join("pg-add-twin.mjs");
    let env = [
        ("SCHEMA", schema.as_str().to_owned()),
        ("QUEUE", queue.to_owned()),
        ("OP", op.to_owned()),
        ("SPEC", spec.to_string()),
    ];
    let out = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        support::run_node(script.to_str().expect("a UTF-8 path"), &env)
    })
    .await
    .expect("the node helper task");
    let reply: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{out:?}: {e}"));
    reply["ids"].as_array().expect("ids").clone()
}

/// Every column a job add writes, for `queue` in `schema`, in insertion order.
async fn job_rows(schema: &TestSchema, queue: &str) -> Vec<Value> {
    let mut conn = admin().await;
    sqlx::query_scalar(&format!(
        "SELECT row_to_json(t)::jsonb FROM (
           SELECT id, seq, name, state, data, opts, priority, delay_ms, max_attempts,
                  added_at_ms, process_at_ms, dedup_id, scheduler_id, parent_queue,
                  parent_id, parent_key, pending_deps, attempts_made, attempts_started
             FROM {}.job WHERE queue = $1 ORDER BY abs(seq)) t",
        schema.name().quoted()
    ))
    .bind(queue)
    .fetch_all(&mut conn)
    .await
    .expect("read the job rows")
}

/// The events of `queue` in `schema` (name and payload), oldest first.
async fn events(schema: &TestSchema, queue: &str) -> Vec<(String, Value)> {
    let mut conn = admin().await;
    sqlx::query_as(&format!(
        "SELECT event, data FROM {}.event WHERE queue = $1 ORDER BY id",
        schema.name().quoted()
    ))
    .bind(queue)
    .fetch_all(&mut conn)
    .await
    .expect("read the events")
}

/// The flow links of `schema`.
async fn dependency_rows(schema: &TestSchema) -> Vec<Value> {
    let mut conn = admin().await;
    sqlx::query_scalar(&format!(
        "SELECT row_to_json(d)::jsonb FROM {}.job_dependency d
          ORDER BY parent_queue, parent_id, child_key",
        schema.name().quoted()
    ))
    .fetch_all(&mut conn)
    .await
    .expect("read the dependencies")
}

/// A job as `Queue::add` builds it (Node's defaults filled in).
#[allow(clippy::needless_pass_by_value)] // Called with `json!(…)` temporaries.
fn job(name: &str, data: Value, opts: JobOptions) -> Job {
    Job::new(name, data.to_string(), opts.with_node_defaults(), T0)
}

/// A job with the parent key options `Queue::add` derives from it.
fn new_job(job: Job) -> NewJob {
    let parent = ParentKeyOpts::of(&job);
    NewJob { job, parent }
}

/// A job `id` named "orphan" whose parent, `parent` in queue "q", does not exist.
fn orphan(id: &str, parent: &str) -> NewJob {
    let opts = JobOptions::new()
        .job_id(id)
        .parent(ParentOptions::new(parent, "q"));
    new_job(job("orphan", json!({}), opts))
}

fn flow_node(queue: &str, entry: NewJob) -> FlowNode {
    FlowNode {
        entry,
        queue: QueueName::new(queue).unwrap(),
        prefix: Prefix::new("bull").unwrap(),
    }
}

/// The jobs of the single-add twin, as Node's `queue.add` arguments and as Rust jobs.
fn single_adds() -> (Value, Vec<Job>) {
    let node = json!([
        {"name": "rich", "data": {"x": 1, "s": "é"}, "opts": {
            "priority": 3, "delay": 500, "attempts": 4, "lifo": true, "jobId": "custom",
            "backoff": {"type": "fixed", "delay": 10}, "removeOnComplete": 5, "timestamp": T0}},
        {"name": "plain", "data": [1, 2], "opts": {"timestamp": T0}},
        {"name": "urgent", "data": {}, "opts": {"priority": 7, "timestamp": T0}},
        {"name": "dedup", "data": {"d": true}, "opts": {
            "deduplication": {"id": "d1", "ttl": 1000}, "removeOnFail": {"age": 60, "count": 2},
            "timestamp": T0}},
        {"name": "dedup", "data": {"d": false}, "opts": {
            "deduplication": {"id": "d1", "ttl": 1000}, "timestamp": T0}},
        {"name": "plain", "data": {"again": 1}, "opts": {"timestamp": T0}},
    ]);
    let rust = vec![
        job(
            "rich",
            json!({"x": 1, "s": "é"}),
            JobOptions::new()
                .priority(3)
                .delay(Duration::from_millis(500))
                .attempts(4)
                .lifo(true)
                .job_id("custom")
                .backoff(Backoff::fixed(Duration::from_millis(10)))
                .remove_on_complete(KeepJobs::Number(5))
                .created_at(T0),
        ),
        job("plain", json!([1, 2]), JobOptions::new().created_at(T0)),
        job(
            "urgent",
            json!({}),
            JobOptions::new().priority(7).created_at(T0),
        ),
        job(
            "dedup",
            json!({"d": true}),
            JobOptions::new()
                .deduplication(Deduplication::new("d1").ttl(Duration::from_secs(1)))
                .remove_on_fail(KeepJobs::Policy {
                    age: Some(Duration::from_secs(60)),
                    count: Some(2),
                    limit: None,
                })
                .created_at(T0),
        ),
        job(
            "dedup",
            json!({"d": false}),
            JobOptions::new()
                .deduplication(Deduplication::new("d1").ttl(Duration::from_secs(1)))
                .created_at(T0),
        ),
        job(
            "plain",
            json!({"again": 1}),
            JobOptions::new().created_at(T0),
        ),
    ];
    (node, rust)
}

#[tokio::test]
async fn jobs_added_from_rust_are_the_rows_node_writes() {
    let (node_spec, jobs) = single_adds();
    let by_node = TestSchema::new("add_node");
    let node_ids = node_twin(&by_node, "q", "add", node_spec).await;

    let by_rust = TestSchema::new("add_rust");
    let backend = by_rust.backend("q").await;
    let mut rust_ids = Vec::new();
    for job in &jobs {
        let parent = ParentKeyOpts::default();
        rust_ids.push(json!(backend.add_job(job, &parent).await.unwrap().as_str()));
    }

    assert_eq!(rust_ids, node_ids);
    assert_eq!(
        rust_ids,
        json!(["custom", "1", "2", "3", "3", "5"])
            .as_array()
            .unwrap()
            .clone(),
        "the deduplicated add answers the winner's id (and spends an id, as Node does)"
    );
    let (node_rows, rust_rows) = (job_rows(&by_node, "q").await, job_rows(&by_rust, "q").await);
    assert_eq!(node_rows.len(), 5);
    assert_eq!(rust_rows, node_rows);
    let rust_events = events(&by_rust, "q").await;
    assert_eq!(rust_events, events(&by_node, "q").await);
    assert!(
        rust_events.iter().any(|(e, _)| e == "deduplicated"),
        "{rust_events:?}"
    );
    // Spot checks of what the twin comparison covers.
    let rich = &rust_rows[0];
    assert_eq!(rich["state"], "delayed");
    assert_eq!(rich["seq"], -1, "LIFO negates the sequence");
    assert_eq!(rich["process_at_ms"], T0 + 500);
    assert_eq!(rich["opts"]["removeOnComplete"], 5);
    assert_eq!(
        rust_rows[1]["max_attempts"], 0,
        "Node's `attempts: 0` default"
    );
    assert_eq!(rust_rows[2]["priority"], 7);
    assert_eq!(rust_rows[3]["dedup_id"], "d1");
}

#[tokio::test]
async fn a_bulk_added_from_rust_is_the_rows_node_writes() {
    let node_spec = json!([
        {"name": "a", "data": {"a": 1}, "opts": {"timestamp": T0}},
        {"name": "b", "data": {"b": 2}, "opts": {"delay": 100, "timestamp": T0}},
        {"name": "c", "data": "text", "opts": {"jobId": "c-id", "priority": 2, "timestamp": T0}},
    ]);
    let jobs = vec![
        new_job(job("a", json!({"a": 1}), JobOptions::new().created_at(T0))),
        new_job(job(
            "b",
            json!({"b": 2}),
            JobOptions::new()
                .delay(Duration::from_millis(100))
                .created_at(T0),
        )),
        new_job(job(
            "c",
            json!("text"),
            JobOptions::new().job_id("c-id").priority(2).created_at(T0),
        )),
    ];
    let by_node = TestSchema::new("bulk_node");
    let node_ids = node_twin(&by_node, "q", "addBulk", node_spec).await;

    let by_rust = TestSchema::new("bulk_rust");
    let backend = by_rust.backend("q").await;
    let ids = backend.add_jobs(&jobs).await.unwrap();
    let rust_ids: Vec<Value> = ids.iter().map(|id| json!(id.as_str())).collect();
    assert_eq!(rust_ids, node_ids);
    assert_eq!(rust_ids, vec![json!("1"), json!("2"), json!("c-id")]);
    let rust_rows = job_rows(&by_rust, "q").await;
    assert_eq!(rust_rows, job_rows(&by_node, "q").await);
    assert_eq!(rust_rows[1]["state"], "delayed");

    assert!(backend.add_jobs(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_flow_added_from_rust_is_the_rows_node_writes() {
    let node_spec = json!({
        "name": "root-job", "queueName": "q1", "data": {"r": 1},
        "opts": {"jobId": "root", "timestamp": T0},
        "children": [
            {"name": "kid", "queueName": "q2", "data": {"k": 1},
             "opts": {"jobId": "kid", "timestamp": T0, "failParentOnFailure": true}},
            {"name": "later", "queueName": "q1", "data": {},
             "opts": {"jobId": "later", "timestamp": T0, "delay": 50}},
        ],
    });
    let by_node = TestSchema::new("flow_node");
    let node_ids = node_twin(&by_node, "q1", "flow", node_spec).await;

    let by_rust = TestSchema::new("flow_rust");
    let backend = by_rust.backend("q1").await;
    let root = NewJob {
        job: job(
            "root-job",
            json!({"r": 1}),
            JobOptions::new().job_id("root").created_at(T0),
        ),
        parent: ParentKeyOpts {
            add_to_waiting_children: true,
            ..ParentKeyOpts::default()
        },
    };
    // On PostgreSQL a parent's queue is its bare name and its key `<queue>:<id>`.
    let parent = ParentOptions::new("root", "q1");
    let kid = new_job(job(
        "kid",
        json!({"k": 1}),
        JobOptions::new()
            .job_id("kid")
            .created_at(T0)
            .fail_parent_on_failure(true)
            .parent(parent.clone()),
    ));
    let later = new_job(job(
        "later",
        json!({}),
        JobOptions::new()
            .job_id("later")
            .created_at(T0)
            .delay(Duration::from_millis(50))
            .parent(parent),
    ));
    assert_eq!(kid.parent.parent_key.as_deref(), Some("q1:root"));
    let outcomes = backend
        .add_flow(&[
            flow_node("q1", root),
            flow_node("q2", kid),
            flow_node("q1", later),
        ])
        .await
        .unwrap();
    let rust_ids: Vec<Value> = outcomes
        .into_iter()
        .map(|o| json!(o.unwrap().as_str()))
        .collect();
    assert_eq!(rust_ids, node_ids);

    for queue in ["q1", "q2"] {
        assert_eq!(
            job_rows(&by_rust, queue).await,
            job_rows(&by_node, queue).await,
            "queue {queue}"
        );
    }
    let deps = dependency_rows(&by_rust).await;
    assert_eq!(deps, dependency_rows(&by_node).await);
    assert_eq!(deps.len(), 2);
    let q1 = job_rows(&by_rust, "q1").await;
    assert_eq!(q1[0]["state"], "waiting-children");
    assert_eq!(q1[0]["pending_deps"], 2);
    assert_eq!(job_rows(&by_rust, "q2").await[0]["parent_key"], "q1:root");
}

#[tokio::test]
async fn a_child_of_a_missing_parent_is_refused_as_node_refuses_it() {
    let (schema, backend) = TestSchema::with_backend("add_orphan", "q").await;
    let orphan = orphan("kid", "nobody");
    let err = refused(
        backend.add_job(&orphan.job, &orphan.parent).await,
        ScriptErrorCode::ParentNotFound,
    );
    assert_eq!(err.command, "addJob");
    assert_eq!(err.job_id.as_deref(), Some("kid"));
    assert_eq!(err.parent_key.as_deref(), Some("q:nobody"));
    assert!(job_rows(&schema, "q").await.is_empty(), "nothing was added");

    // Through a batch (which takes the flow engine, the job having a parent) too: the bulk
    // error names it by its index.
    let Err(Error::Bulk(failed)) = backend.add_jobs(std::slice::from_ref(&orphan)).await else {
        panic!("the orphan is refused")
    };
    assert!(
        failed.added.is_empty() && failed.unknown.is_none(),
        "{failed}"
    );
    let refused = failed.refused.into_iter().next().expect("one refusal");
    assert_eq!(refused.index, Some(0));
    let err = script_error(refused.error);
    assert_eq!(err.code, ScriptErrorCode::ParentNotFound);
    assert_eq!(err.parent_key.as_deref(), Some("q:nobody"));
    assert!(job_rows(&schema, "q").await.is_empty(), "nothing was added");
}

#[tokio::test]
async fn a_batch_whose_statement_fails_writes_nothing_and_says_so() {
    let (schema, backend) = TestSchema::with_backend("add_batch_fails", "q").await;
    // Data that is not JSON (another runtime's mistake): the cast to jsonb fails the whole
    // statement, which names no job.
    let mut bad = job("bad", json!({}), JobOptions::new());
    bad.data = "{not json".to_owned();
    let batch = [
        new_job(job("a", json!({}), JobOptions::new())),
        new_job(bad),
    ];
    let Err(Error::Bulk(failed)) = backend.add_jobs(&batch).await else {
        panic!("the statement fails")
    };
    assert!(
        failed.added.is_empty() && failed.unknown.is_none(),
        "{failed}"
    );
    assert_eq!(failed.refused.len(), 1, "{failed}");
    assert_eq!(failed.refused[0].index, None);
    assert_eq!(failed.to_retry(), [0, 1]);
    assert!(
        failed
            .to_string()
            .starts_with("added 0 of 2 jobs; the store refused the bulk ("),
        "{failed}"
    );
    assert!(job_rows(&schema, "q").await.is_empty(), "nothing was added");
}

#[tokio::test]
async fn a_batch_with_a_child_links_it_to_its_parent() {
    let (schema, backend) = TestSchema::with_backend("add_batch_child", "q").await;
    let none = ParentKeyOpts::default();
    let parent = job("parent", json!({}), JobOptions::new().job_id("p"));
    backend.add_job(&parent, &none).await.unwrap();
    let kid = new_job(job(
        "kid",
        json!({}),
        JobOptions::new().parent(ParentOptions::new("p", "q")),
    ));
    let plain = new_job(job("plain", json!({}), JobOptions::new()));
    let ids = backend.add_jobs(&[kid, plain]).await.unwrap();
    assert_eq!(ids, vec![JobId::from("1"), JobId::from("2")]);
    let rows = job_rows(&schema, "q").await;
    assert_eq!(rows[0]["pending_deps"], 1);
    assert_eq!(rows[1]["parent_id"], "p");
    assert_eq!(rows[1]["parent_key"], "q:p");
    assert_eq!(dependency_rows(&schema).await[0]["child_key"], "q:1");
}

#[tokio::test]
async fn a_flow_node_with_a_missing_parent_is_refused_alone() {
    let (schema, backend) = TestSchema::with_backend("flow_orphan", "q").await;
    let orphan = orphan("o", "gone");
    let fine = new_job(job("fine", json!({}), JobOptions::new().job_id("f")));
    let outcomes = backend
        .add_flow(&[flow_node("q", orphan), flow_node("q", fine)])
        .await
        .unwrap();
    let refused = outcomes[0].clone().unwrap_err();
    assert_eq!(refused.code, ScriptErrorCode::ParentNotFound);
    assert_eq!(refused.command, "addJob");
    assert_eq!(refused.parent_key.as_deref(), Some("q:gone"));
    assert_eq!(outcomes[1], Ok(JobId::from("f")));
    let rows = job_rows(&schema, "q").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], "f");

    assert!(backend.add_flow(&[]).await.unwrap().is_empty());
}
