//! A queue on a Redis Cluster: the URL names a few nodes (`redis+cluster://`), and the
//! prefix carries a hash tag (`{shop}`), so that every key of a queue lands in one slot, as
//! upstream's scripts need. A prefix without a tag is refused before anything is written.
//!
//! `REDIS_CLUSTER_URL=redis+cluster://127.0.0.1:7000,127.0.0.1:7001 cargo run --example cluster`

use std::error::Error;
use std::time::Duration;

use bullmq::job::JobType;
use bullmq::prelude::*;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{Prefix, QueueEventsOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let url = std::env::var("REDIS_CLUSTER_URL")
        .unwrap_or_else(|_| "redis+cluster://127.0.0.1:7000,127.0.0.1:7001".to_owned());
    // The tests run each example under a prefix of its own; the tag keeps it in one slot.
    let tag = std::env::var("BULLMQ_PREFIX").unwrap_or_else(|_| "shop".to_owned());
    let name = QueueName::new("invoices")?;

    let untagged = RedisOptions::new(url.as_str()).prefix(Prefix::new(tag.as_str())?);
    if let Err(err) = RedisBackend::connect(&untagged, name.clone()).await {
        println!(
            "untagged prefix refused: {}",
            matches!(err, bullmq::Error::Invalid(_))
        );
    }

    let options = RedisOptions::new(url.as_str()).prefix(Prefix::new(format!("{{{tag}}}"))?);
    let queue = Queue::from_backend(RedisBackend::connect(&options, name).await?)?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<RedisBackend>, _: CancellationToken| async move {
            let invoice: serde_json::Value = job.data_as()?;
            Ok(format!("invoice {} sent", invoice["number"]))
        },
    )
    .await?;
    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;

    let job = queue
        .add(
            "send",
            &serde_json::json!({"number": 42}),
            JobOptions::new(),
        )
        .await?;
    let result = events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await?;
    println!("result {result}");
    let counts = queue
        .get_job_counts(&[JobType::State(JobState::Completed)])
        .await?;
    println!("completed {}", counts[0].1);
    worker.close().await;
    Ok(())
}

// Output:
// untagged prefix refused: true
// result "invoice 42 sent"
// completed 1
