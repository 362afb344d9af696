//! Rate limits: at most two jobs a second across every worker of the queue (Node.js's
//! `limiter: { max: 2, duration: 1000 }`), however many jobs wait and however many slots the
//! workers have.
//!
//! `cargo run --example rate_limit` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::RateLimiter;
use bullmq::prelude::*;
use tokio::sync::mpsc;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("rate-limit").await?)?;
    for n in 1..=4 {
        queue.add("call-api", &n, JobOptions::new()).await?;
    }
    let limit = RateLimiter {
        max: 2,
        duration: Duration::from_secs(1),
    };
    let (done, mut started) = mpsc::unbounded_channel();
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new().concurrency(4).limiter(limit),
        move |job: ActiveJob<DefaultBackend>, _: CancellationToken| {
            let done = done.clone();
            async move {
                let _ = done.send(job.processed_on.unwrap_or(0));
                Ok(serde_json::Value::Null)
            }
        },
    )
    .await?;
    let mut times = Vec::new();
    for _ in 0..4 {
        times.push(started.recv().await.ok_or("the worker stopped")?);
    }
    times.sort_unstable();
    // Whatever the machine's speed, the third job cannot start within the first job's window.
    println!("4 jobs processed");
    println!("jobs 1-2 within one window: {}", times[1] - times[0] < 1000);
    println!(
        "job 3 waited for the next window: {}",
        times[2] - times[0] >= 1000
    );
    worker.close().await;
    Ok(())
}

// Output:
// 4 jobs processed
// jobs 1-2 within one window: true
// job 3 waited for the next window: true
