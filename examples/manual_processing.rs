//! Manual processing: take jobs one at a time with your own lock token and finish each
//! yourself (Node.js's `worker.getNextJob` and `job.moveToCompleted` / `moveToFailed`),
//! for a loop of your own instead of the worker's.
//!
//! `cargo run --example manual_processing` (Redis at `REDIS_URL`).

use std::error::Error;

use bullmq::prelude::*;
use bullmq::{JobFailure, LockToken};

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("manual-processing").await?)?;
    for amount in [40, -5] {
        queue.add("refund", &amount, JobOptions::new()).await?;
    }
    // `autorun(false)`: the worker's own loop never runs; the closure is never called.
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new().autorun(false),
        |_: ActiveJob<DefaultBackend>, _: CancellationToken| async { Ok(serde_json::Value::Null) },
    )
    .await?;

    let token = LockToken::new("manual-1");
    while let Some(job) = worker.get_next_job(&token, false).await? {
        let amount: i64 = job.data_as()?;
        let handle = worker.job(&job);
        if amount > 0 {
            handle
                .move_to_completed(&format!("refunded {amount}"), &token, false)
                .await?;
        } else {
            handle
                .move_to_failed(&JobFailure::new("a refund must be positive"), &token, false)
                .await?;
        }
        let state = queue.get_job_state(&job.id).await?.ok_or("job gone")?;
        println!("job {} ({amount}): {state}", job.id);
    }
    println!("no job left");
    worker.close().await;
    Ok(())
}

// Output:
// job 1 (40): completed
// job 2 (-5): failed
// no job left
