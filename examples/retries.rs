//! Retries and backoff: a job that fails is tried again, up to `attempts` times, after a
//! delay its `backoff` sets (here exponential: 100 ms, then 200 ms).
//!
//! `cargo run --example retries` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;
use tokio::sync::mpsc;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("retries").await?)?;
    let opts = JobOptions::new()
        .attempts(3)
        .backoff(Backoff::exponential(Duration::from_millis(100)));
    let job = queue
        .add("flaky-call", &"https://example.com", opts)
        .await?;

    let (done, mut attempts) = mpsc::unbounded_channel();
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        move |job: ActiveJob<DefaultBackend>, _: CancellationToken| {
            let done = done.clone();
            async move {
                let attempt = job.attempts_made + 1;
                let _ = done.send(attempt);
                if attempt < 3 {
                    return Err(JobError::failed(format!("timed out (attempt {attempt})")));
                }
                Ok(serde_json::json!("200 OK"))
            }
        },
    )
    .await?;
    for _ in 0..3 {
        let attempt = attempts.recv().await.ok_or("the worker stopped")?;
        println!("attempt {attempt}");
    }
    // The last attempt's result lands just after the processor returns.
    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let result = events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await?;
    println!("result {result}, after {} failed attempts", 2);
    worker.close().await;
    Ok(())
}

// Output:
// attempt 1
// attempt 2
// attempt 3
// result "200 OK", after 2 failed attempts
