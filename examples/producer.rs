//! The producer side: add jobs to a Redis queue from Rust, exactly as Node.js BullMQ 6.7.6
//! would, read them back, and see bad input refused. A Node.js `Worker` on the same queue
//! would process them.
//!
//! Run with `cargo run --example producer` (Redis at `REDIS_URL`, default
//! `redis://127.0.0.1:6379`).

use std::process::ExitCode;
use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{Backoff, BulkJob, Deduplication, JobOptions, KeepJobs, Queue, QueueName};
use serde::Serialize;

#[path = "support/redact.rs"]
mod redact;
use redact::redacted;

#[derive(Serialize)]
struct Email<'a> {
    to: &'a str,
    subject: &'a str,
}

/// Errors are printed with `Display`, never with `Debug` as `fn main() -> Result<…>` would.
#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("producer: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let name = QueueName::new("producer-emails")?;
    let backend = RedisBackend::connect(&RedisOptions::new(url.clone()), name.clone())
        .await
        .map_err(|err| {
            format!(
                "cannot connect to Redis at {} ({err}): start Redis there, or set REDIS_URL to \
                 a running server",
                redacted(&url)
            )
        })?;
    let queue = Queue::from_backend(backend)?;

    // One job, with the options a Node.js user knows.
    let opts = JobOptions::new()
        .attempts(5)
        .backoff(Backoff::exponential(Duration::from_secs(1)))
        .remove_on_complete(KeepJobs::Number(1000))
        .deduplication(Deduplication::new("welcome-ada").ttl(Duration::from_secs(60)));
    let email = Email {
        to: "ada@example.com",
        subject: "Welcome",
    };
    let job = queue.add("welcome", &email, opts).await?;
    println!("added job {} ({})", job.id, job.data);

    // Many jobs in one round trip.
    let batch = (0..3)
        .map(|i| BulkJob {
            name: "digest".to_owned(),
            data: serde_json::json!({ "week": i }),
            opts: JobOptions::new(),
        })
        .collect();
    let added = queue.add_bulk(batch).await?;
    println!("added {} more", added.len());

    // Read back what Redis holds, as Node.js would.
    let stored = queue.get_job(&job.id).await?.ok_or("the job vanished")?;
    println!(
        "state: {:?}, attempts allowed: {:?}",
        queue.get_job_state(&job.id).await?,
        stored.opts.attempts
    );
    println!("waiting in the queue: {}", queue.count().await?);

    // Bad input is refused before anything is written, naming the field and the bound.
    if let Err(err) = queue
        .add("x", &(), JobOptions::new().priority(5_000_000))
        .await
    {
        println!("refused: {err}");
    }

    queue.obliterate(true, 1000).await?;
    Ok(())
}
