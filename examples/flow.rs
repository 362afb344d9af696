//! Flows: a parent job runs once all its children are done, and reads their results.
//! Here two children in one queue count the words of a chapter each, and their parent in
//! another queue adds the counts up.
//!
//! `cargo run --example flow --features flow` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::QueueEventsOptions;
use bullmq::prelude::*;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let parts = env::redis("flow-chapters").await?;
    let reports = env::redis("flow-books").await?;
    let chapters = QueueName::new("flow-chapters")?;
    let chapter = |text: &str| FlowJob::new(chapters.clone(), "count", text);
    let book = FlowJob::new(QueueName::new("flow-books")?, "total", "my book")
        .child(chapter("it was a dark and stormy night"))
        .child(chapter("the end"));
    let tree = FlowProducer::new(reports.clone()).add(book).await?;
    println!(
        "added {} with {} children",
        tree.job.name,
        tree.children.len()
    );

    let counter = Worker::new(
        QueueName::new("flow-chapters")?,
        parts,
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let text: String = job.data_as()?;
            Ok(serde_json::json!(text.split_whitespace().count()))
        },
    )
    .await?;
    let adder = Worker::new(
        QueueName::new("flow-books")?,
        reports.clone(),
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let counts = job.get_children_values().await?;
            let total: u64 = counts.values().filter_map(serde_json::Value::as_u64).sum();
            Ok(serde_json::json!({ "chapters": counts.len(), "words": total }))
        },
    )
    .await?;

    let events = QueueEvents::new(reports, QueueEventsOptions::default())?;
    let total = events
        .wait_until_finished(&tree.job.id, Some(Duration::from_secs(20)))
        .await?;
    println!("the parent returned {total}");
    counter.close().await;
    adder.close().await;
    events.close().await;
    Ok(())
}

// Output:
// added total with 2 children
// the parent returned {"chapters":2,"words":9}
