//! OpenTelemetry: one trace from the producer to the worker. The `add` span's context
//! travels inside the job (as Node.js's `bullmq-otel` writes it), and the worker's `process`
//! span takes it as its parent, whichever runtime added the job. The spans here go to an
//! in-memory exporter so that they can be printed; use your OTLP exporter instead.
//! Needs the `otel` feature.
//!
//! `cargo run --example otel --features otel` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::QueueEventsOptions;
use bullmq::prelude::*;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("bullmq")))
        .init();

    let queue = Queue::from_backend(env::redis("images").await?)?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |_: ActiveJob<DefaultBackend>, _: CancellationToken| async { Ok("resized") },
    )
    .await?;
    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let job = queue
        .add("resize", &serde_json::json!({"id": 7}), JobOptions::new())
        .await?;
    events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await?;
    worker.close().await;

    let spans = exporter.get_finished_spans()?;
    let find = |name: &str| spans.iter().find(|span| span.name == name);
    let (add, process) = (find("add images.resize"), find("process images"));
    if let (Some(add), Some(process)) = (add, process) {
        println!("{} ({:?})", add.name, add.span_kind);
        println!("{} ({:?})", process.name, process.span_kind);
        let same_trace = add.span_context.trace_id() == process.span_context.trace_id();
        println!("one trace: {same_trace}");
        println!(
            "process's parent is add: {}",
            process.parent_span_id == add.span_context.span_id()
        );
    }
    Ok(())
}

// Output:
// add images.resize (Producer)
// process images (Consumer)
// one trace: true
// process's parent is add: true
