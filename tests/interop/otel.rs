//! One trace across Node.js and Rust through a job, on Redis and on PostgreSQL: Node.js BullMQ
//! 6.7.6 with `bullmq-otel` and an in-memory span exporter (`tests/node/otel.mjs`) on one side,
//! this crate with `tracing-opentelemetry` and the SDK's in-memory exporter on the other.
//!
//! - a Node producer's `add` span is the parent of our worker's `process <queue>` span;
//! - our producer's `add` span is the parent of Node's worker `process <queue>` span, and the
//!   `tm` we store is the carrier `bullmq-otel` writes (`{"traceparent":"00-…-…-01"}`);
//! - as upstream: `omitContext` writes none, bulk jobs carry the `addBulk` span, flow nodes
//!   their `addNode` spans, and every attempt of a retried job continues the producer's trace;
//! - a scheduler's iterations carry the upsert's context on from worker to worker, whichever
//!   runtime upserted and whichever runs the worker.
//!
//! Run: `cargo test --features otel,postgres,flow,scheduler --test interop otel::`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use bullmq::backend::Backend;
use bullmq::postgres::PostgresBackend;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{JobOptions, Prefix, Queue, QueueName, Worker, WorkerEvent, WorkerOptions};
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

/// Spans exported by this process while the guard lives (this thread's subscriber), with the
/// bridge set up as the Observability guide says for spans shaped as Node's: no code
/// location, thread, target or busy/idle attributes, and only `INFO` and above (`WARN` for
/// sqlx, whose server notices would be span events Node's spans do not have).
pub(crate) struct Capture {
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Capture {
    pub(crate) fn start() -> Self {
        use tracing_subscriber::Layer as _;
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("bullmq"))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_default(tracing::Level::INFO)
                    .with_target("sqlx", tracing::Level::WARN),
            );
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        // Tests run in parallel, each with its own default subscriber: a callsite whose
        // interest another thread cached while this one was not yet registered would stay
        // off here. Asking every callsite again, now that this one is live, turns it on.
        tracing::callsite::rebuild_interest_cache();
        Self {
            exporter,
            _provider: provider,
            _guard: guard,
        }
    }

    pub(crate) fn spans(&self) -> Vec<SpanData> {
        self.exporter.get_finished_spans().expect("spans")
    }

    fn one(&self, name: &str) -> SpanData {
        let all = self.spans();
        let found: Vec<_> = all.iter().filter(|s| s.name == name).cloned().collect();
        assert_eq!(
            found.len(),
            1,
            "one span named {name:?} among {:?}",
            all.iter().map(|s| s.name.to_string()).collect::<Vec<_>>()
        );
        found.into_iter().next().unwrap()
    }
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// Node's spans from `otel.mjs` output.
fn node_span<'a>(spans: &'a Value, name: &str) -> &'a Value {
    let found: Vec<_> = spans
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one Node span named {name:?} in {spans}");
    found[0]
}

/// How to reach one queue from Node (`otel.mjs` environment).
pub(crate) struct Side {
    pub(crate) queue: String,
    pub(crate) env: Vec<(String, String)>,
}

impl Side {
    /// A worker on this side's queue running `processor`.
    pub(crate) async fn worker<B, F, Fut>(
        &self,
        backend: B,
        options: WorkerOptions,
        processor: F,
    ) -> Worker<B, F>
    where
        B: Backend,
        F: Fn(bullmq::ActiveJob<B>, bullmq::CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = bullmq::ProcessResult<Value>> + Send,
    {
        Worker::new(
            QueueName::new(&self.queue).unwrap(),
            backend,
            options,
            processor,
        )
        .await
        .unwrap()
    }

    /// A queue of this side's name on `backend`.
    pub(crate) fn queue_on<B: Backend>(&self, backend: B) -> Queue<B> {
        Queue::try_new(QueueName::new(&self.queue).unwrap(), backend)
            .expect("the backend is bound to this queue")
    }

    pub(crate) fn node(&self, op: &str, arg: &str) -> Value {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let out = support::run_node_args(&["otel.mjs", op, arg], &env);
        serde_json::from_str(out.trim()).expect("otel.mjs prints JSON")
    }
}

/// Waits (20 s at most) until `worker` completes a job (`what`), then closes it.
pub(crate) async fn close_after_one<B: Backend, P: bullmq::Processor<B>>(
    worker: &Worker<B, P>,
    what: &str,
) {
    let mut events = worker.events();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !matches!(events.recv().await, Ok(WorkerEvent::Completed { .. })) {}
    })
    .await
    .expect(what);
    worker.close().await;
}

/// Runs a worker on `side` that completes its first job (`what`), then closes it.
async fn complete_one<B: Backend>(side: &Side, backend: B, what: &str) {
    let worker = side
        .worker(backend, WorkerOptions::new(), |_job, _cancel| async {
            Ok(json!("done"))
        })
        .await;
    close_after_one(&worker, what).await;
}

/// Node adds a job under its `add` span; our worker's attempt span is its child.
async fn node_producer_rust_worker<B: Backend>(side: &Side, backend: B) {
    let capture = Capture::start();
    let added = side.node("add", "from-node");
    let add = node_span(&added["spans"], &format!("add {}.from-node", side.queue));
    assert_eq!(add["kind"], 3, "Node's add is a producer span");

    complete_one(side, backend, "our worker completes Node's job").await;

    let process = capture.one(&format!("process {}", side.queue));
    assert_eq!(process.span_kind, SpanKind::Consumer);
    assert_eq!(
        process.span_context.trace_id().to_string(),
        add["traceId"].as_str().unwrap(),
        "our attempt continues Node's trace"
    );
    assert_eq!(
        process.parent_span_id.to_string(),
        add["spanId"].as_str().unwrap(),
        "Node's add span is our attempt's parent, as in Node's worker"
    );
    assert_eq!(
        attr(&process, "bullmq.job.id").as_deref(),
        added["jobId"].as_str()
    );
    assert_eq!(
        attr(&process, "bullmq.job.name").as_deref(),
        Some("from-node")
    );
    // Node's attribute set: no messaging attributes unless turned on.
    assert_eq!(attr(&process, "messaging.system"), None);
    assert_eq!(
        process
            .events
            .iter()
            .map(|e| e.name.as_ref())
            .collect::<Vec<_>>(),
        ["job completed"]
    );
    let complete = capture.one(&format!("complete {}", side.queue));
    assert_eq!(complete.parent_span_id, process.span_context.span_id());
}

/// We add a job under our `add` span; Node's worker's attempt span is its child. Returns the
/// job id and our add span.
async fn rust_producer_node_worker<B: Backend>(side: &Side, backend: B) -> (String, SpanData) {
    let capture = Capture::start();
    let queue = side.queue_on(backend);
    let job = queue
        .add("from-rust", &json!({"from": "rust"}), JobOptions::new())
        .await
        .unwrap();
    let add = capture.one(&format!("add {}.from-rust", side.queue));
    assert_eq!(add.span_kind, SpanKind::Producer);
    assert_eq!(
        attr(&add, "bullmq.job.id").as_deref(),
        Some(job.id.as_str())
    );
    assert_eq!(
        attr(&add, "bullmq.queue.name").as_deref(),
        Some(side.queue.as_str())
    );

    let worked = side.node("work", "1");
    let process = node_span(&worked["spans"], &format!("process {}", side.queue));
    assert_eq!(process["kind"], 4, "Node's process is a consumer span");
    assert_eq!(
        process["traceId"].as_str().unwrap(),
        add.span_context.trace_id().to_string(),
        "Node's attempt continues our trace"
    );
    assert_eq!(
        process["parentSpanId"].as_str().unwrap(),
        add.span_context.span_id().to_string(),
        "our add span is the parent of Node's attempt"
    );
    (job.id.to_string(), add)
}

fn traceparent(span: &SpanData) -> String {
    format!(
        "{{\"traceparent\":\"00-{}-{}-01\"}}",
        span.span_context.trace_id(),
        span.span_context.span_id()
    )
}

pub(crate) async fn redis_side(tag: &str) -> (Side, RedisOptions, support::PrefixGuard) {
    let prefix = support::unique_prefix();
    let guard = support::PrefixGuard(prefix.clone());
    let options =
        RedisOptions::new(support::redis_url()).prefix(Prefix::new(&prefix).expect("prefix"));
    let side = Side {
        queue: format!("otel-{tag}"),
        env: vec![
            ("BACKEND".into(), "redis".into()),
            ("PREFIX".into(), prefix),
            ("QUEUE".into(), format!("otel-{tag}")),
        ],
    };
    (side, options, guard)
}

/// [`redis_side`] with a queue on it: where the Redis-only cases start.
async fn redis_queue(
    tag: &str,
) -> (
    Side,
    RedisOptions,
    support::PrefixGuard,
    Queue<RedisBackend>,
) {
    let (side, options, guard) = redis_side(tag).await;
    let queue = side.queue_on(redis_backend(&side, &options).await);
    (side, options, guard, queue)
}

/// Iteration `id` of a scheduler on `queue`, which must be there.
async fn iteration<B: Backend>(queue: &Queue<B>, id: &str) -> bullmq::Job {
    let id = bullmq::JobId::from(id.to_owned());
    queue.get_job(&id).await.unwrap().expect("the iteration")
}

/// The iteration whose id span `add` records in `bullmq.job.id`.
async fn added_by<B: Backend>(queue: &Queue<B>, add: &SpanData) -> bullmq::Job {
    let id = attr(add, "bullmq.job.id").expect("the next iteration's id");
    iteration(queue, &id).await
}

pub(crate) async fn redis_backend(side: &Side, options: &RedisOptions) -> RedisBackend {
    RedisBackend::connect(options, QueueName::new(&side.queue).unwrap())
        .await
        .expect("connect")
}

/// Runs `$case(&side, backend)` on each store, as the tests `$case::redis` and
/// `$case::postgres`; `$tag` names the queue (`otel-<tag>`).
macro_rules! on_both_stores {
    ($case:ident, $tag:literal) => {
        mod $case {
            #[tokio::test(flavor = "current_thread")]
            async fn redis() {
                let (side, options, _guard) = super::redis_side($tag).await;
                super::$case(&side, super::redis_backend(&side, &options).await).await;
            }

            #[tokio::test(flavor = "current_thread")]
            async fn postgres() {
                let schema = super::support::postgres::SchemaGuard::new("otel");
                let side = super::postgres_side($tag, &schema);
                let backend: super::PostgresBackend = schema.backend(&side.queue).await;
                super::$case(&side, backend).await;
            }
        }
    };
}

on_both_stores!(node_producer_rust_worker, "n2r");

#[tokio::test(flavor = "current_thread")]
async fn redis_our_producer_trace_continues_in_node_worker() {
    let (side, options, _guard) = redis_side("r2n").await;
    let (id, add) = rust_producer_node_worker(&side, redis_backend(&side, &options).await).await;
    // The carrier is the one bullmq-otel writes.
    let mut redis = support::redis().await;
    let prefix = &side.env[1].1;
    let opts: String = redis::cmd("HGET")
        .arg(format!("{prefix}:{}:{id}", side.queue))
        .arg("opts")
        .query_async(&mut redis)
        .await
        .unwrap();
    let opts: Value = serde_json::from_str(&opts).unwrap();
    assert_eq!(opts["tm"].as_str().unwrap(), traceparent(&add));
}

pub(crate) fn postgres_side(tag: &str, schema: &support::postgres::SchemaGuard) -> Side {
    Side {
        queue: format!("otel-{tag}"),
        env: vec![
            ("BACKEND".into(), "postgres".into()),
            ("DATABASE_URL".into(), support::postgres::database_url()),
            ("SCHEMA".into(), schema.as_str().to_owned()),
            ("QUEUE".into(), format!("otel-{tag}")),
        ],
    }
}

#[tokio::test(flavor = "current_thread")]
async fn postgres_our_producer_trace_continues_in_node_worker() {
    let schema = support::postgres::SchemaGuard::new("otel_r2n");
    let side = postgres_side("r2n", &schema);
    let backend: PostgresBackend = schema.backend(&side.queue).await;
    let (id, add) = rust_producer_node_worker(&side, backend).await;
    let queue = side.queue_on(schema.backend(&side.queue).await);
    let job = queue
        .get_job(&bullmq::JobId::from(id))
        .await
        .unwrap()
        .expect("the job");
    let tm = job.opts.telemetry.and_then(|t| t.metadata);
    assert_eq!(tm.as_deref(), Some(traceparent(&add).as_str()));
}

fn span_named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// `omitContext` keeps the context out; jobs added in bulk carry the `addBulk` span's context
/// (Node's `Queue#addBulk`); metadata given by the caller wins there.
#[tokio::test(flavor = "current_thread")]
async fn omit_context_is_honoured_and_bulk_jobs_carry_their_span() {
    use bullmq::options::Telemetry;
    use support::bulk::bulk_job;
    let capture = Capture::start();
    let (side, _, _guard, queue) = redis_queue("bulk").await;
    let omit = Telemetry {
        metadata: None,
        omit_context: Some(true),
    };
    let quiet = queue
        .add(
            "quiet",
            &json!({}),
            JobOptions::new().telemetry(omit.clone()),
        )
        .await
        .unwrap();
    assert_eq!(quiet.opts.telemetry, Some(omit));

    let given = Telemetry {
        metadata: Some(
            "{\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"}"
                .to_owned(),
        ),
        omit_context: None,
    };
    let jobs = queue
        .add_bulk(vec![
            bulk_job("a", JobOptions::new()),
            bulk_job("b", JobOptions::new().telemetry(given.clone())),
        ])
        .await
        .unwrap();
    let bulk = capture.one(&format!("addBulk {}", side.queue));
    assert_eq!(bulk.span_kind, SpanKind::Producer);
    assert_eq!(attr(&bulk, "bullmq.job.bulk.count").as_deref(), Some("2"));
    let tm = |i: usize| jobs[i].opts.telemetry.clone().and_then(|t| t.metadata);
    assert_eq!(tm(0), Some(traceparent(&bulk)));
    assert_eq!(tm(1), given.metadata);
}

/// A retried job: as in Node, each attempt continues the producer's trace (the worker reads
/// the context from the job's options), and the `retry` span's context is written to the job
/// hash's own `tm` field (Node's `fieldsToUpdate.tm`).
#[tokio::test(flavor = "current_thread")]
async fn a_retried_job_s_attempts_continue_the_producer_trace() {
    let capture = Capture::start();
    let (side, options, _guard, queue) = redis_queue("retry").await;
    let job = queue
        .add("flaky", &json!({}), JobOptions::new().attempts(2))
        .await
        .unwrap();
    let backend = redis_backend(&side, &options).await;
    let worker = side
        .worker(backend, WorkerOptions::new(), |job, _cancel| async move {
            if job.attempts_made == 0 {
                Err(bullmq::JobError::failed("once"))
            } else {
                Ok(json!("done"))
            }
        })
        .await;
    close_after_one(&worker, "completes on its second attempt").await;

    let spans = capture.spans();
    let add = capture.one(&format!("add {}.flaky", side.queue));
    let attempts = span_named(&spans, &format!("process {}", side.queue));
    assert_eq!(attempts.len(), 2);
    let retry = capture.one(&format!("retry {}", side.queue));
    let trace = add.span_context.trace_id();
    assert!(attempts.iter().all(|s| s.span_context.trace_id() == trace));
    assert!(
        attempts
            .iter()
            .all(|s| s.parent_span_id == add.span_context.span_id()),
        "every attempt is the add's child"
    );
    let first = attempts
        .iter()
        .find(|s| s.events.iter().any(|e| e.name == "job failed"))
        .expect("the first attempt was retried");
    assert_eq!(retry.parent_span_id, first.span_context.span_id());
    let mut redis = support::redis().await;
    let prefix = &side.env[1].1;
    let tm: String = redis::cmd("HGET")
        .arg(format!("{prefix}:{}:{}", side.queue, job.id))
        .arg("tm")
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(tm, traceparent(&retry));
}

/// Each job of a flow carries its own `addNode` span's context; a child's `addNode` is a child
/// of its parent's, the root's of `addFlow` (Node's `FlowProducer`).
#[tokio::test(flavor = "current_thread")]
async fn flow_nodes_carry_their_add_node_spans() {
    use bullmq::{FlowJob, FlowProducer};
    let capture = Capture::start();
    let (side, options, _guard) = redis_side("flow").await;
    let producer = FlowProducer::new(redis_backend(&side, &options).await);
    let queue = QueueName::new(&side.queue).unwrap();
    let tree = producer
        .add(
            FlowJob::new(queue.clone(), "parent", json!({})).child(FlowJob::new(
                queue,
                "child",
                json!({}),
            )),
        )
        .await
        .unwrap();
    let spans = capture.spans();
    let flow = capture.one(&format!("addFlow {}", side.queue));
    assert_eq!(attr(&flow, "bullmq.flow.name").as_deref(), Some("parent"));
    let nodes = span_named(&spans, &format!("addNode {}", side.queue));
    assert_eq!(nodes.len(), 2);
    let node_of = |name: &str| {
        *nodes
            .iter()
            .find(|s| attr(s, "bullmq.job.name").as_deref() == Some(name))
            .unwrap()
    };
    let (root, child) = (node_of("parent"), node_of("child"));
    assert_eq!(root.parent_span_id, flow.span_context.span_id());
    assert_eq!(child.parent_span_id, root.span_context.span_id());
    let tm = |job: &bullmq::Job| job.opts.telemetry.clone().and_then(|t| t.metadata);
    assert_eq!(tm(&tree.job), Some(traceparent(root)));
    assert_eq!(tm(&tree.children[0].job), Some(traceparent(child)));
}

/// With the library's spans filtered out (target `bullmq` off), a job still carries the
/// application's trace: the context of the span it was added in, one job or in bulk.
#[tokio::test(flavor = "current_thread")]
async fn with_the_bullmq_target_filtered_out_jobs_carry_the_caller_s_context() {
    use support::bulk::bulk_job;
    use tracing::Instrument as _;
    use tracing_subscriber::filter::{LevelFilter, Targets};
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("app"));
    let filter = Targets::new()
        .with_default(LevelFilter::TRACE)
        .with_target("bullmq", LevelFilter::OFF);
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(filter).with(layer));
    let (_, _, _cleanup, queue) = redis_queue("filtered").await;
    let request = tracing::info_span!(target: "app", "request");
    let (one, bulk) = async {
        let one = queue
            .add("one", &json!({}), JobOptions::new())
            .await
            .unwrap();
        let bulk = queue
            .add_bulk(vec![bulk_job("bulk", JobOptions::new())])
            .await
            .unwrap();
        (one, bulk)
    }
    .instrument(request)
    .await;
    let spans = exporter.get_finished_spans().expect("spans");
    let names: Vec<_> = spans.iter().map(|s| s.name.to_string()).collect();
    assert_eq!(names, ["request"], "the library's spans are filtered out");
    let tm = |job: &bullmq::Job| job.opts.telemetry.clone().and_then(|t| t.metadata);
    assert_eq!(tm(&one), Some(traceparent(&spans[0])));
    assert_eq!(tm(&bulk[0]), Some(traceparent(&spans[0])));
}

/// The trace context of a scheduler's iterations (Node's `upsertJobScheduler`, from a producer
/// and from the worker that takes an iteration): the first iteration carries the upsert's
/// `add` span; a worker taking an iteration adds the next one in an `add <queue>.<job name>`
/// span of its own (inside the attempt) and passes the iteration's `tm` on unchanged, or, for
/// an iteration that carries none, its `add` span's context.
async fn scheduler_iterations_carry_the_trace<B: Backend>(side: &Side, backend: B) {
    let queue_name = side.queue.as_str();
    use bullmq::RepeatOptions;
    use bullmq::scheduler::{JobScheduler, JobTemplate};
    let every = RepeatOptions::every(Duration::from_secs(3600));
    let scheduler = JobScheduler::new(backend.clone());
    let queue = Queue::try_new(QueueName::new(queue_name).unwrap(), backend.clone())
        .expect("the backend is bound to this queue");
    let tm = |job: &bullmq::Job| job.opts.telemetry.clone().and_then(|t| t.metadata);
    // Upserted with no subscriber: its first iteration carries no context.
    let bare = scheduler
        .upsert("bare", &every, JobTemplate::named("bare"))
        .await
        .unwrap()
        .expect("an iteration");

    let capture = Capture::start();
    let first = scheduler
        .upsert("tick", &every, JobTemplate::named("tick"))
        .await
        .unwrap()
        .expect("an iteration");
    let upsert = capture.one(&format!("add {queue_name}.tick"));
    assert_eq!(upsert.span_kind, SpanKind::Producer);
    assert_eq!(
        attr(&upsert, "bullmq.job.scheduler.id").as_deref(),
        Some("tick")
    );
    let first = queue.get_job(&first.id).await.unwrap().expect("iteration");
    assert_eq!(tm(&first), Some(traceparent(&upsert)));
    let bare = queue.get_job(&bare.id).await.unwrap().expect("iteration");
    assert_eq!(tm(&bare), None);

    let worker = Worker::new(
        QueueName::new(queue_name).unwrap(),
        backend.clone(),
        WorkerOptions::new(),
        |_job, _cancel| async { Ok(json!("done")) },
    )
    .await
    .unwrap();
    let mut events = worker.events();
    let mut done = 0;
    tokio::time::timeout(Duration::from_secs(20), async {
        while done < 2 {
            if let Ok(WorkerEvent::Completed { .. }) = events.recv().await {
                done += 1;
            }
        }
    })
    .await
    .expect("both iterations complete");
    worker.close().await;

    let spans = capture.spans();
    let attempt_of = |job: &bullmq::Job| {
        *span_named(&spans, &format!("process {queue_name}"))
            .iter()
            .find(|s| attr(s, "bullmq.job.id").as_deref() == Some(job.id.as_str()))
            .expect("the iteration's attempt")
    };
    // The worker's `add` span of scheduler `id`: a producer span inside the attempt.
    let advance_of = |id: &str, attempt: &SpanData| {
        let adds: Vec<_> = span_named(&spans, &format!("add {queue_name}.{id}"))
            .into_iter()
            .filter(|s| s.span_context.span_id() != upsert.span_context.span_id())
            .collect();
        assert_eq!(adds.len(), 1, "one worker add span for {id}");
        let add = adds[0];
        assert_eq!(add.span_kind, SpanKind::Producer);
        assert_eq!(attr(add, "bullmq.job.scheduler.id").as_deref(), Some(id));
        assert_eq!(add.parent_span_id, attempt.span_context.span_id());
        add.clone()
    };

    // `tick`: the attempt continues the upsert's trace; the next iteration carries the same
    // context as the first.
    let attempt = attempt_of(&first);
    assert_eq!(attempt.parent_span_id, upsert.span_context.span_id());
    let add = advance_of("tick", attempt);
    let next = added_by(&queue, &add).await;
    assert_ne!(next.id, first.id);
    assert_eq!(next.repeat_job_key.as_deref(), Some("tick"));
    assert_eq!(
        tm(&next),
        tm(&first),
        "the iteration's context is passed on"
    );

    // `bare`: the next iteration carries the worker's `add` span.
    let attempt = attempt_of(&bare);
    let add = advance_of("bare", attempt);
    let next = added_by(&queue, &add).await;
    assert_eq!(tm(&next), Some(traceparent(&add)));
}

on_both_stores!(scheduler_iterations_carry_the_trace, "sched");

/// A Node producer's scheduler: our worker's attempt of its iteration continues Node's trace,
/// and the next iteration our worker adds carries Node's context on.
async fn node_scheduler_rust_worker<B: Backend>(side: &Side, backend: B) {
    let capture = Capture::start();
    let upserted = side.node("upsert", "tick");
    let add = node_span(&upserted["spans"], &format!("add {}.tick", side.queue));
    let node_tm = format!(
        "{{\"traceparent\":\"00-{}-{}-01\"}}",
        add["traceId"].as_str().unwrap(),
        add["spanId"].as_str().unwrap()
    );
    let queue = side.queue_on(backend.clone());
    let first = iteration(&queue, upserted["jobId"].as_str().unwrap()).await;
    let tm = |job: &bullmq::Job| job.opts.telemetry.clone().and_then(|t| t.metadata);
    assert_eq!(tm(&first).as_deref(), Some(node_tm.as_str()));

    complete_one(side, backend, "our worker completes Node's iteration").await;

    let process = capture.one(&format!("process {}", side.queue));
    assert_eq!(
        process.span_context.trace_id().to_string(),
        add["traceId"].as_str().unwrap()
    );
    assert_eq!(
        process.parent_span_id.to_string(),
        add["spanId"].as_str().unwrap()
    );
    let ours = capture.one(&format!("add {}.tick", side.queue));
    assert_eq!(ours.parent_span_id, process.span_context.span_id());
    let next = added_by(&queue, &ours).await;
    assert_eq!(tm(&next).as_deref(), Some(node_tm.as_str()));
}

/// Our scheduler: Node's worker's attempt of its iteration continues our trace, and the next
/// iteration Node's worker adds carries our context on, as ours does.
async fn rust_scheduler_node_worker<B: Backend>(side: &Side, backend: B) {
    use bullmq::RepeatOptions;
    use bullmq::scheduler::{JobScheduler, JobTemplate};
    let capture = Capture::start();
    JobScheduler::new(backend.clone())
        .upsert(
            "tick",
            &RepeatOptions::every(Duration::from_secs(3600)),
            JobTemplate::named("tick"),
        )
        .await
        .unwrap()
        .expect("an iteration");
    let upsert = capture.one(&format!("add {}.tick", side.queue));

    let worked = side.node("work", "1");
    let process = node_span(&worked["spans"], &format!("process {}", side.queue));
    assert_eq!(
        process["traceId"].as_str().unwrap(),
        upsert.span_context.trace_id().to_string()
    );
    assert_eq!(
        process["parentSpanId"].as_str().unwrap(),
        upsert.span_context.span_id().to_string()
    );
    let node_add = node_span(&worked["spans"], &format!("add {}.tick", side.queue));
    assert_eq!(
        node_add["kind"], 3,
        "Node's worker adds the next in a producer span"
    );
    assert_eq!(node_add["attributes"]["bullmq.job.scheduler.id"], "tick");
    let next_id = node_add["attributes"]["bullmq.job.id"]
        .as_str()
        .expect("the next iteration's id");
    let next = iteration(&side.queue_on(backend), next_id).await;
    assert_eq!(
        next.opts.telemetry.and_then(|t| t.metadata),
        Some(traceparent(&upsert))
    );
}

on_both_stores!(node_scheduler_rust_worker, "sched-n2r");
on_both_stores!(rust_scheduler_node_worker, "sched-r2n");

/// A stalled-jobs check that recovers a job lists its id in `bullmq.worker.stalled.jobs` as
/// Node's worker does, a string array attribute, with a `job stalled` event per id.
#[tokio::test(flavor = "current_thread")]
async fn a_stalled_recovery_lists_the_job_ids_as_a_string_array() {
    use bullmq::backend::LockToken;
    use opentelemetry::{Array, Value as OtelValue};
    let capture = Capture::start();
    let (side, options, _guard, queue) = redis_queue("stall").await;
    let job = queue
        .add("stuck", &json!({}), JobOptions::new())
        .await
        .unwrap();
    // Taken under a short lock that nobody renews: it stalls.
    let taker = side
        .worker(
            redis_backend(&side, &options).await,
            WorkerOptions::new()
                .autorun(false)
                .lock_duration(Duration::from_millis(300)),
            |_job, _cancel| async { Ok(json!(null)) },
        )
        .await;
    taker
        .get_next_job(&LockToken::new("abandoned"), false)
        .await
        .unwrap()
        .expect("the job");
    let rescuer = side
        .worker(
            redis_backend(&side, &options).await,
            WorkerOptions::new().stalled_interval(Duration::from_millis(500)),
            |_job, _cancel| async { Ok(json!("rescued")) },
        )
        .await;
    close_after_one(&rescuer, "the stalled job completes").await;
    taker.close().await;

    let spans = capture.spans();
    let checks = span_named(&spans, &format!("moveStalledJobsToWait {}", side.queue));
    let stalled = |s: &SpanData| {
        s.attributes
            .iter()
            .find(|kv| kv.key.as_str() == "bullmq.worker.stalled.jobs")
            .map(|kv| kv.value.clone())
    };
    let listed = |ids: Vec<String>| {
        OtelValue::Array(Array::String(ids.into_iter().map(Into::into).collect()))
    };
    let recovery: Vec<_> = checks
        .iter()
        .filter(|s| stalled(s) == Some(listed(vec![job.id.to_string()])))
        .collect();
    assert_eq!(recovery.len(), 1, "{checks:?}");
    let per_job: Vec<_> = recovery[0]
        .events
        .iter()
        .filter(|e| e.name == "job stalled")
        .collect();
    assert_eq!(per_job.len(), 1, "{:?}", recovery[0].events);
    assert!(
        per_job[0]
            .attributes
            .iter()
            .any(|kv| kv.key.as_str() == "bullmq.job.id" && kv.value.to_string() == job.id.as_str()),
        "{per_job:?}"
    );
    // A check that found nothing lists an empty array, as Node's does.
    assert!(
        checks
            .iter()
            .any(|s| stalled(s) == Some(listed(Vec::new()))),
        "{checks:?}"
    );
}

/// W3C trace context that counts its injections and extractions: installed as the global
/// propagator, it shows the library uses the application's propagator, while writing what
/// every other test of this binary expects.
#[derive(Debug)]
struct CountingPropagator(opentelemetry_sdk::propagation::TraceContextPropagator);

static PROPAGATED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl opentelemetry::propagation::TextMapPropagator for CountingPropagator {
    fn inject_context(
        &self,
        cx: &opentelemetry::Context,
        injector: &mut dyn opentelemetry::propagation::Injector,
    ) {
        PROPAGATED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.0.inject_context(cx, injector);
    }

    fn extract_with_context(
        &self,
        cx: &opentelemetry::Context,
        extractor: &dyn opentelemetry::propagation::Extractor,
    ) -> opentelemetry::Context {
        PROPAGATED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.0.extract_with_context(cx, extractor)
    }

    fn fields(&self) -> opentelemetry::propagation::text_map_propagator::FieldIter<'_> {
        self.0.fields()
    }
}

/// The application's global propagator (B3, a composite, …) carries the context when one is
/// set, as `bullmq-otel`'s `propagation.inject` does; W3C otherwise.
#[tokio::test(flavor = "current_thread")]
async fn the_global_propagator_is_used_when_one_is_set() {
    let capture = Capture::start();
    let (side, _, _guard, queue) = redis_queue("propagator").await;
    let before = PROPAGATED.load(std::sync::atomic::Ordering::SeqCst);
    opentelemetry::global::set_text_map_propagator(CountingPropagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    ));
    let job = queue
        .add("counted", &json!({}), JobOptions::new())
        .await
        .unwrap();
    assert!(PROPAGATED.load(std::sync::atomic::Ordering::SeqCst) > before);
    let add = capture.one(&format!("add {}.counted", side.queue));
    assert_eq!(
        job.opts.telemetry.and_then(|t| t.metadata),
        Some(traceparent(&add))
    );
}

/// A job added in bulk that omits the context is stored as Node stores it with its telemetry
/// set up: `tm: false` beside `omc: true` on Redis (`{"metadata":false,"omitContext":true}` in
/// PostgreSQL's long-key options).
async fn omitted_bulk_context_is_stored_as_false<B: Backend>(side: &Side, backend: B) {
    use bullmq::options::Telemetry;
    use support::bulk::bulk_job;
    let _capture = Capture::start();
    let queue = side.queue_on(backend);
    let omit = Telemetry {
        metadata: None,
        omit_context: Some(true),
    };
    let jobs = queue
        .add_bulk(vec![bulk_job(
            "quiet",
            JobOptions::new().telemetry(omit.clone()),
        )])
        .await
        .unwrap();
    let stored = queue.get_job(&jobs[0].id).await.unwrap().expect("the job");
    match stored.opts.telemetry {
        // Short keys: `omc` read, `tm: false` kept raw.
        Some(t) => {
            assert_eq!(t, omit);
            assert_eq!(stored.opts.extra.get("tm"), Some(&json!(false)));
        }
        // Long keys: the whole `telemetry` object kept raw (its metadata is no string).
        None => assert_eq!(
            stored.opts.extra.get("telemetry"),
            Some(&json!({"metadata": false, "omitContext": true}))
        ),
    }
}

on_both_stores!(omitted_bulk_context_is_stored_as_false, "omit-false");
