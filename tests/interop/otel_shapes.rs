//! Our spans against Node.js BullMQ 6.7.0 with `bullmq-otel` 2.0.1, span by span: the same
//! operations run on each side (`tests/node/otel.mjs` ops `produce`, `consume`, `admin`,
//! `manual`), each side's in-memory exporter read, and every span reduced to its shape: name
//! (the queue written `Q`), kind, parent (the name of a span of the same side, `remote` for
//! another process's, `root`), attribute names with their value types, events with theirs,
//! and status. The sets of shapes must be equal, with the messaging attributes off (the
//! default).
//!
//! Both directions: Node's producer feeds our worker and ours feeds Node's, so each worker
//! continues the other runtime's traces; the producers' spans are compared with each other,
//! the workers' with each other. On Redis and on PostgreSQL.
//!
//! Run: `cargo test --features otel,postgres,flow,scheduler --test interop otel_shapes::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::backend::{Backend, LockToken};
use bullmq::postgres::PostgresBackend;
use bullmq::{
    Backoff, FlowJob, FlowProducer, JobError, JobOptions, JobState, Queue, QueueName, Worker,
    WorkerEvent, WorkerOptions,
};
use opentelemetry::Value as OtelValue;
use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value, json};

use super::otel::{Capture, Side, postgres_side, redis_backend, redis_side};
use crate::support;
use support::bulk::bulk_job;

/// How many jobs the producer set adds (see `otel.mjs`): each finishes once.
const JOBS: usize = 12;

/// One span's shape, as text (so that a difference prints readably).
type Shape = String;

fn kind_code(kind: &SpanKind) -> u8 {
    match kind {
        SpanKind::Internal => 0,
        SpanKind::Server => 1,
        SpanKind::Client => 2,
        SpanKind::Producer => 3,
        SpanKind::Consumer => 4,
    }
}

fn value_type(value: &OtelValue) -> &'static str {
    match value {
        OtelValue::Bool(_) => "boolean",
        OtelValue::I64(_) | OtelValue::F64(_) => "number",
        OtelValue::String(_) => "string",
        OtelValue::Array(opentelemetry::Array::String(_)) => "string[]",
        OtelValue::Array(opentelemetry::Array::Bool(_)) => "boolean[]",
        OtelValue::Array(_) => "number[]",
        _ => "unknown",
    }
}

/// `name:type` of each attribute, sorted.
fn typed(pairs: impl Iterator<Item = (String, String)>) -> String {
    let mut pairs: Vec<String> = pairs.map(|(k, t)| format!("{k}:{t}")).collect();
    pairs.sort();
    pairs.join(",")
}

/// One span's shape: `events` are its events' shapes, each once (a stalled check's `job
/// stalled` events differ only in number).
fn shape(
    name: &str,
    kind: u8,
    parent: &str,
    attributes: &str,
    events: &BTreeSet<String>,
    status: u8,
    queue: &str,
) -> Shape {
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    format!(
        "{} kind={kind} parent={} attrs=[{attributes}] events=[{}] status={status}",
        name.replace(queue, "Q"),
        parent.replace(queue, "Q"),
        events.join(";")
    )
}

/// The shapes of our exported spans.
fn our_shapes(spans: &[SpanData], queue: &str) -> BTreeSet<Shape> {
    let names: HashMap<SpanId, &str> = spans
        .iter()
        .map(|s| (s.span_context.span_id(), s.name.as_ref()))
        .collect();
    spans
        .iter()
        .map(|s| {
            let parent = if s.parent_span_id == SpanId::INVALID {
                "root"
            } else {
                names.get(&s.parent_span_id).copied().unwrap_or("remote")
            };
            let attributes = typed(
                s.attributes
                    .iter()
                    .map(|kv| (kv.key.to_string(), value_type(&kv.value).to_owned())),
            );
            let events: BTreeSet<String> = s
                .events
                .iter()
                .map(|e| {
                    let attrs = typed(
                        e.attributes
                            .iter()
                            .map(|kv| (kv.key.to_string(), value_type(&kv.value).to_owned())),
                    );
                    format!("{}{{{attrs}}}", e.name)
                })
                .collect();
            let status = match s.status {
                Status::Unset => 0,
                Status::Ok => 1,
                Status::Error { .. } => 2,
            };
            shape(
                &s.name,
                kind_code(&s.span_kind),
                parent,
                &attributes,
                &events,
                status,
                queue,
            )
        })
        .collect()
}

fn node_typed(types: &Value) -> String {
    typed(
        types
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, t)| (k.clone(), t.as_str().unwrap().to_owned())),
    )
}

/// The shapes of Node's spans as `otel.mjs` prints them.
fn node_shapes(out: &Value, queue: &str) -> BTreeSet<Shape> {
    let spans = out["spans"].as_array().unwrap();
    let names: HashMap<&str, &str> = spans
        .iter()
        .map(|s| (s["spanId"].as_str().unwrap(), s["name"].as_str().unwrap()))
        .collect();
    spans
        .iter()
        .map(|s| {
            let parent = match s["parentSpanId"].as_str() {
                None => "root",
                Some(id) => names.get(id).copied().unwrap_or("remote"),
            };
            let events: BTreeSet<String> = s["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    format!(
                        "{}{{{}}}",
                        e["name"].as_str().unwrap(),
                        node_typed(&e["types"])
                    )
                })
                .collect();
            shape(
                s["name"].as_str().unwrap(),
                u8::try_from(s["kind"].as_u64().unwrap()).unwrap(),
                parent,
                &node_typed(&s["types"]),
                &events,
                u8::try_from(s["status"].as_u64().unwrap()).unwrap(),
                queue,
            )
        })
        .collect()
}

/// Asserts two sets of shapes equal, printing what only one side has.
fn assert_same(what: &str, node: &BTreeSet<Shape>, ours: &BTreeSet<Shape>) {
    let only_node: Vec<_> = node.difference(ours).collect();
    let only_ours: Vec<_> = ours.difference(node).collect();
    assert!(
        only_node.is_empty() && only_ours.is_empty(),
        "{what}: spans differ\n only Node's:\n  {}\n only ours:\n  {}\n",
        only_node
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  "),
        only_ours
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

/// Asserts a set holds a span named `name` (so that an empty set on both sides cannot pass).
fn assert_has(shapes: &BTreeSet<Shape>, names: &[&str]) {
    for name in names {
        assert!(
            shapes.iter().any(|s| s.starts_with(&format!("{name} "))),
            "a `{name}` span among {shapes:#?}"
        );
    }
}

/// The producer set of `otel.mjs produce`, by us.
async fn produce<B: Backend>(queue: &str, backend: B) {
    let name = QueueName::new(queue).unwrap();
    let q =
        Queue::try_new(name.clone(), backend.clone()).expect("the backend is bound to this queue");
    q.add("ok", &json!({"n": 1}), JobOptions::new())
        .await
        .unwrap();
    q.add("flaky", &json!({}), JobOptions::new().attempts(2))
        .await
        .unwrap();
    q.add(
        "backoff",
        &json!({}),
        JobOptions::new()
            .attempts(2)
            .backoff(Backoff::fixed(Duration::from_millis(10))),
    )
    .await
    .unwrap();
    for job in ["fatal", "slow", "limited"] {
        q.add(job, &json!({}), JobOptions::new()).await.unwrap();
    }
    q.add_bulk(vec![
        bulk_job("b1", JobOptions::new()),
        bulk_job("b2", JobOptions::new()),
    ])
    .await
    .unwrap();
    let flows = FlowProducer::new(backend);
    flows
        .add(
            FlowJob::new(name.clone(), "root", json!({}))
                .without_opts()
                .child(FlowJob::new(name.clone(), "child", json!({}))),
        )
        .await
        .unwrap();
    flows
        .add_bulk(vec![
            FlowJob::new(name.clone(), "f1", json!({})).without_opts(),
            FlowJob::new(name, "f2", json!({})).without_opts(),
        ])
        .await
        .unwrap();
}

/// The worker of `otel.mjs consume`, by us: until every job of the producer set finished,
/// then pause (not waiting), resume, close.
async fn consume<B: Backend>(queue: &str, backend: B) {
    let (renewed_tx, renewed) = tokio::sync::watch::channel(false);
    let limited_once = Arc::new(Mutex::new(HashSet::new()));
    let worker = Worker::new(
        QueueName::new(queue).unwrap(),
        backend,
        WorkerOptions::new().lock_duration(Duration::from_secs(1)),
        move |job, _cancel| {
            let first_limit =
                job.name == "limited" && limited_once.lock().unwrap().insert(job.id.clone());
            let mut renewed = renewed.clone();
            async move {
                match job.name.as_str() {
                    "flaky" | "backoff" if job.attempts_made == 0 => {
                        Err(JobError::failed("first try fails"))
                    }
                    "fatal" => Err(JobError::failed("no way")),
                    "limited" if first_limit => Err(JobError::RateLimited {
                        delay: Duration::from_millis(10),
                    }),
                    "slow" => {
                        // Holds its lock until the worker renewed it once.
                        renewed.wait_for(|r| *r).await.unwrap();
                        Ok(json!("ok"))
                    }
                    _ => Ok(json!("ok")),
                }
            }
        },
    )
    .await
    .unwrap();
    let mut events = worker.events();
    tokio::time::timeout(Duration::from_secs(30), async {
        let mut finished = 0;
        while finished < JOBS {
            match events.recv().await {
                Ok(WorkerEvent::Completed { .. } | WorkerEvent::Failed { retried: false, .. }) => {
                    finished += 1;
                }
                Ok(WorkerEvent::LocksRenewed { .. }) => {
                    renewed_tx.send_replace(true);
                }
                _ => {}
            }
        }
    })
    .await
    .expect("every job of the producer set finishes");
    worker.pause(true).await;
    worker.resume();
    worker.close().await;
}

/// The administration set of `otel.mjs admin`, by us (`trim_events` not on PostgreSQL, where
/// upstream's backend has no `trimEvents`).
async fn admin<B: Backend>(queue: &str, backend: B, postgres: bool) {
    let q = Queue::try_new(QueueName::new(queue).unwrap(), backend)
        .expect("the backend is bound to this queue");
    let victim = q
        .add("victim", &json!({}), JobOptions::new())
        .await
        .unwrap();
    let progressed = q
        .add("progressed", &json!({}), JobOptions::new())
        .await
        .unwrap();
    q.pause().await.unwrap();
    q.resume().await.unwrap();
    q.update_job_progress(&progressed.id, &json!(50))
        .await
        .unwrap();
    q.remove(&victim.id, true).await.unwrap();
    q.remove_deduplication_key("dedup").await.unwrap();
    q.clean(Duration::ZERO, 0, JobState::Completed)
        .await
        .unwrap();
    if !postgres {
        q.trim_events(100).await.unwrap();
    }
    q.retry_jobs(bullmq::job::FinishedState::Failed, 10, None)
        .await
        .unwrap();
    q.promote_jobs(10).await.unwrap();
    q.rate_limit(Duration::from_millis(1)).await.unwrap();
    q.drain(true).await.unwrap();
    q.obliterate(true, 1000).await.unwrap();
}

/// `otel.mjs manual`, by us: two jobs taken by hand with `get_next_job`, one completed, one
/// failed through the worker's job handle.
async fn manual<B: Backend>(queue: &str, backend: B) {
    let name = QueueName::new(queue).unwrap();
    let q =
        Queue::try_new(name.clone(), backend.clone()).expect("the backend is bound to this queue");
    for job in ["manual", "manual-fail"] {
        q.add(job, &json!({}), JobOptions::new()).await.unwrap();
    }
    let worker = Worker::new(
        name,
        backend,
        WorkerOptions::new().autorun(false),
        |_job, _cancel| async { Ok(json!(null)) },
    )
    .await
    .unwrap();
    let token = LockToken::new("manual-token");
    // The first job taken is completed by hand, the second failed.
    for (which, fails) in [("the job", false), ("the second job", true)] {
        let job = worker
            .get_next_job(&token, true)
            .await
            .unwrap()
            .expect(which);
        let job = worker.job(&job);
        if fails {
            let failure = bullmq::JobFailure::new("no");
            job.move_to_failed(&failure, &token, false).await.unwrap();
        } else {
            job.move_to_completed(&json!("ok"), &token, false)
                .await
                .unwrap();
        }
    }
    worker.close().await;
}

/// Both directions of the producer and worker sets, and the admin and manual sets, on the
/// store `backend` makes (one fresh queue per call).
async fn compare<B, F, Fut>(sides: [Side; 5], postgres: bool, backend: F)
where
    B: Backend,
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = B>,
{
    let [n2r, r2n, node_admin, rust_admin, manual_side] = sides;

    // Node's producer → our worker.
    let node_produced = n2r.node("produce", "");
    let capture = Capture::start();
    consume(&n2r.queue, backend(n2r.queue.clone()).await).await;
    let our_worker = our_shapes(&capture.spans(), &n2r.queue);
    drop(capture);

    // Our producer → Node's worker.
    let capture = Capture::start();
    produce(&r2n.queue, backend(r2n.queue.clone()).await).await;
    let our_producer = our_shapes(&capture.spans(), &r2n.queue);
    drop(capture);
    let node_worker = node_shapes(&r2n.node("consume", &JOBS.to_string()), &r2n.queue);

    let node_producer = node_shapes(&node_produced, &n2r.queue);
    assert_has(
        &node_producer,
        &[
            "add Q.ok",
            "addBulk Q",
            "addFlow Q",
            "addNode Q",
            "addBulkFlows",
        ],
    );
    assert_same("the producer set", &node_producer, &our_producer);
    assert_has(
        &node_worker,
        &[
            "process Q",
            "complete Q",
            "retry Q",
            "delay Q",
            "fail Q",
            "rateLimit Q",
            "extendLocks Q",
            "moveStalledJobsToWait Q",
            "startStalledCheckTimer Q",
            "pause Q",
            "resume Q",
            "close Q",
        ],
    );
    assert_same("the worker set", &node_worker, &our_worker);

    // The queue's administration, each side on a queue of its own.
    let node = node_shapes(&node_admin.node("admin", ""), &node_admin.queue);
    let capture = Capture::start();
    admin(
        &rust_admin.queue,
        backend(rust_admin.queue.clone()).await,
        postgres,
    )
    .await;
    let ours = our_shapes(&capture.spans(), &rust_admin.queue);
    drop(capture);
    assert_has(
        &node,
        &[
            "pause Q",
            "resume Q",
            "updateJobProgress Q",
            "remove Q",
            "removeDeduplicationKey Q",
            "clean Q",
            "retryJobs Q",
            "promoteJobs Q",
            "rateLimit Q",
            "drain Q",
            "obliterate Q",
        ],
    );
    if !postgres {
        assert_has(&node, &["trimEvents Q"]);
    }
    assert_same("the admin set", &node, &ours);

    // A job taken by hand: `getNextJob`, its parent the job's producer.
    let node = node_shapes(&manual_side.node("manual", ""), &manual_side.queue);
    let mut ours_side = manual_side;
    ours_side.queue.push_str("-rs");
    let capture = Capture::start();
    manual(&ours_side.queue, backend(ours_side.queue.clone()).await).await;
    let ours = our_shapes(&capture.spans(), &ours_side.queue);
    drop(capture);
    assert_has(&node, &["getNextJob Q", "complete Q", "fail Q"]);
    assert_same("the manual set", &node, &ours);
}

/// A side on queue `queue` of the same store as `like`.
fn with_queue(like: &Side, queue: String) -> Side {
    let env = like
        .env
        .iter()
        .map(|(k, v)| {
            let v = if k == "QUEUE" {
                queue.clone()
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect();
    Side { queue, env }
}

/// `side` on each queue [`compare`] runs a set on.
fn shape_sides(side: &Side) -> [Side; 5] {
    [
        "shape-n2r",
        "shape-r2n",
        "shape-admin-node",
        "shape-admin-rs",
        "shape-manual",
    ]
    .map(|queue| with_queue(side, queue.into()))
}

#[tokio::test(flavor = "current_thread")]
async fn redis_spans_are_shaped_as_node_s() {
    let (side, options, _guard) = redis_side("shape-n2r").await;
    let sides = shape_sides(&side);
    compare(sides, false, |queue| {
        let options = options.clone();
        let side = with_queue(&side, queue);
        async move { redis_backend(&side, &options).await }
    })
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn postgres_spans_are_shaped_as_node_s() {
    let schema = support::postgres::SchemaGuard::new("otel_shapes");
    let side = postgres_side("shape-n2r", &schema);
    let sides = shape_sides(&side);
    let schema = &schema;
    compare(sides, true, |queue| async move {
        let backend: PostgresBackend = schema.backend(&queue).await;
        backend
    })
    .await;
}
