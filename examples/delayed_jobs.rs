//! Delayed jobs: a job added with a delay waits in the `delayed` set until its time comes,
//! while a job added after it without one runs first.
//!
//! `cargo run --example delayed_jobs` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("delayed-jobs").await?)?;
    let later = queue
        .add(
            "later",
            &"reminder",
            JobOptions::new().delay(Duration::from_millis(300)),
        )
        .await?;
    queue.add("now", &"welcome", JobOptions::new()).await?;
    println!(
        "{} is {}",
        later.name,
        queue.get_job_state(&later.id).await?.ok_or("job gone")?
    );

    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            // Unix ms when the worker took it, against when it was added.
            let waited = job.processed_on.unwrap_or(0).saturating_sub(job.timestamp);
            println!(
                "processed {} (waited its delay: {})",
                job.name,
                waited >= 300
            );
            Ok(serde_json::Value::Null)
        },
    )
    .await?;
    // The delayed job runs last: once it is done, both are.
    events
        .wait_until_finished(&later.id, Some(Duration::from_secs(10)))
        .await?;
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// later is delayed
// processed now (waited its delay: false)
// processed later (waited its delay: true)
