//! Pausing a queue: while it is paused, workers take no job and new jobs wait; resuming
//! lets them run.
//!
//! `cargo run --example pause_resume` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::QueueEventsOptions;
use bullmq::job::JobState;
use bullmq::prelude::*;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("pause-resume").await?)?;
    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |_: ActiveJob<DefaultBackend>, _: CancellationToken| async {
            Ok(serde_json::json!("sent"))
        },
    )
    .await?;

    queue.pause().await?;
    println!("paused: {}", queue.is_paused().await?);
    let job = queue.add("send-invoice", &42, JobOptions::new()).await?;
    // A paused queue keeps its jobs waiting, whatever time passes.
    let state = queue.get_job_state(&job.id).await?;
    println!(
        "while paused the job is {}",
        state.map_or("gone", JobState::as_str)
    );

    queue.resume().await?;
    println!("paused: {}", queue.is_paused().await?);
    let result = events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await?;
    println!("after resuming the job returned {result}");
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// paused: true
// while paused the job is waiting
// paused: false
// after resuming the job returned "sent"
