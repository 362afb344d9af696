//! Prioritized jobs: with one worker, jobs run by priority (1 is the highest), not in the
//! order they were added.
//!
//! `cargo run --example priorities` (Redis at `REDIS_URL`).

use std::error::Error;

use bullmq::prelude::*;
use tokio::sync::mpsc;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("priorities").await?)?;
    for (name, priority) in [("newsletter", 10), ("password-reset", 1), ("invoice", 5)] {
        queue
            .add(name, &(), JobOptions::new().priority(priority))
            .await?;
    }

    let (done, mut finished) = mpsc::unbounded_channel();
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new().concurrency(1),
        move |job: ActiveJob<DefaultBackend>, _: CancellationToken| {
            let done = done.clone();
            async move {
                let _ = done.send((job.name.clone(), job.priority));
                Ok(serde_json::Value::Null)
            }
        },
    )
    .await?;
    for _ in 0..3 {
        let (name, priority) = finished.recv().await.ok_or("the worker stopped")?;
        println!("{name} (priority {priority})");
    }
    worker.close().await;
    Ok(())
}

// Output:
// password-reset (priority 1)
// invoice (priority 5)
// newsletter (priority 10)
