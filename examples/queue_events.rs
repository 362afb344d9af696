//! Queue events: any process can follow what happens to a queue's jobs (Node.js's
//! `QueueEvents`), here the completions and failures, in the order they happened.
//!
//! `cargo run --example queue_events` (Redis at `REDIS_URL`).

use std::error::Error;

use bullmq::prelude::*;
use bullmq::{QueueEvent, QueueEventsOptions};

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("queue-events").await?)?;
    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let mut finished = events.subscribe().only(&["completed", "failed"]);
    // Events written before the reader listens are not read (it starts at `$`).
    events.wait_until_ready().await?;

    for n in [3, -1, 4] {
        queue.add("square-root", &n, JobOptions::new()).await?;
    }
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let n: i64 = job.data_as()?;
            if n < 0 {
                return Err(JobError::unrecoverable(format!(
                    "{n} has no real square root"
                )));
            }
            Ok(serde_json::json!(n * n))
        },
    )
    .await?;

    for _ in 0..3 {
        let event = finished.next_event().await.ok_or("the reader stopped")?;
        match &event.event {
            QueueEvent::Completed {
                job_id,
                returnvalue,
                ..
            } => {
                println!("job {job_id} completed: {returnvalue}");
            }
            QueueEvent::Failed {
                job_id,
                failed_reason,
                ..
            } => {
                println!("job {job_id} failed: {failed_reason}");
            }
            other => println!("{}", other.name()),
        }
    }
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// job 1 completed: 9
// job 2 failed: -1 has no real square root
// job 3 completed: 16
