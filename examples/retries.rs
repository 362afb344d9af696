//! Retries and backoff: a job that fails is tried again, up to `attempts` times, after a
//! delay its `backoff` sets (here exponential: 100 ms, then 200 ms).
//!
//! `cargo run --example retries` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;

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

    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let attempt = job.attempts_made + 1;
            println!("attempt {attempt}");
            if attempt < 3 {
                return Err(JobError::failed(format!("timed out (attempt {attempt})")));
            }
            Ok(serde_json::json!("200 OK"))
        },
    )
    .await?;
    let result = events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await?;
    println!("result {result}, after {} failed attempts", 2);
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// attempt 1
// attempt 2
// attempt 3
// result "200 OK", after 2 failed attempts
