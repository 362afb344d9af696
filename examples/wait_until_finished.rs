//! Waiting for a job's result: `wait_until_finished` listens on the queue's events and
//! answers with the return value, or the reason of a job that failed for good.
//!
//! `cargo run --example wait_until_finished` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;
use bullmq::{QueueEventsOptions, WaitError};

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("wait-until-finished").await?)?;
    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let words: Vec<String> = job.data_as()?;
            if words.is_empty() {
                return Err(JobError::failed("nothing to join"));
            }
            Ok(serde_json::json!(words.join(" ")))
        },
    )
    .await?;

    let ttl = Some(Duration::from_secs(10));
    let job = queue
        .add("join", &["hello", "world"], JobOptions::new())
        .await?;
    let joined = events.wait_until_finished(&job.id, ttl).await?;
    println!("job {} returned {joined}", job.id);

    let empty: [&str; 0] = [];
    let job = queue.add("join", &empty, JobOptions::new()).await?;
    match events.wait_until_finished(&job.id, ttl).await {
        Err(WaitError::Failed { reason, .. }) => println!("job {} failed: {reason}", job.id),
        other => println!("job {} unexpectedly gave {other:?}", job.id),
    }
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// job 1 returned "hello world"
// job 2 failed: nothing to join
