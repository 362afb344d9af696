//! Cancelling a running job: the processor watches its `CancellationToken`, and
//! `Worker::cancel_job` cancels it with a reason the processor can read.
//!
//! `cargo run --example cancellation` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;
use bullmq::{CancelReason, QueueEventsOptions, WaitError};
use tokio::sync::mpsc;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("cancellation").await?)?;
    let (started, mut running) = mpsc::unbounded_channel();
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        move |job: ActiveJob<DefaultBackend>, cancel: CancellationToken| {
            let started = started.clone();
            async move {
                let _ = started.send(job.id.clone());
                // A long export, stopped as soon as the token is cancelled.
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(600)) => Ok(serde_json::json!("exported")),
                    () = cancel.cancelled() => match job.cancel_reason() {
                        Some(CancelReason::Requested(Some(why))) => Err(JobError::unrecoverable(why)),
                        _ => Err(JobError::failed("stopped")),
                    },
                }
            }
        },
    )
    .await?;

    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let job = queue
        .add("export", &"all-orders.csv", JobOptions::new())
        .await?;
    let id = running.recv().await.ok_or("the worker stopped")?;
    println!("job {id} is running");
    println!(
        "cancelled: {}",
        worker.cancel_job(&id, Some("the user closed the tab"))
    );
    match events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await
    {
        Err(WaitError::Failed { reason, .. }) => println!("job {} failed: {reason}", job.id),
        other => println!("unexpected: {other:?}"),
    }
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// job 1 is running
// cancelled: true
// job 1 failed: the user closed the tab
