//! Quick start: a Rust worker processes a queue that a Node.js BullMQ 6.7.0 producer fills
//! (or, when Node.js is not set up, a Rust producer), printing progress as it goes.
//!
//! ```sh
//! npm ci --prefix tests/node      # once, for the Node.js producer (optional)
//! cargo run --example quickstart  # Redis at REDIS_URL, default redis://127.0.0.1:6379
//! # The same program on PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test):
//! cargo run --example quickstart --no-default-features --features postgres
//! ```
//!
//! Only [`connect`] knows the store: everything else is written against
//! [`bullmq::DefaultBackend`], which the features choose.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bullmq::{
    ActiveJob, Backoff, BulkJob, CancellationToken, DefaultBackend, JobError, JobOptions, Queue,
    QueueName, Worker, WorkerEvent, WorkerOptions,
};
use serde::Deserialize;
use serde_json::json;

/// What the producers put in each job.
#[derive(Deserialize)]
struct Resize {
    image: String,
    width: u32,
}

const JOBS: usize = 5;

/// The processor: any async closure over the job; its `Ok` value is the job's return value,
/// its `Err` fails the attempt (retried per the job's `attempts` and `backoff`).
async fn resize(
    job: ActiveJob<DefaultBackend>,
    _cancel: CancellationToken,
) -> Result<serde_json::Value, JobError> {
    let task: Resize = job.data_as()?;
    for percent in [25, 50, 75, 100] {
        tokio::time::sleep(Duration::from_millis(100)).await;
        job.update_progress(&percent).await?;
    }
    Ok(json!({ "thumbnail": format!("thumb-{}", task.image), "width": task.width }))
}

/// Where the queue lives: the store's URL, and a connection to it for `queue`.
#[cfg(feature = "redis")]
mod store {
    use bullmq::redis::{RedisBackend, RedisOptions};

    pub(crate) const URL_VAR: &str = "REDIS_URL";
    pub(crate) const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

    pub(crate) async fn connect(
        url: &str,
        queue: &bullmq::QueueName,
    ) -> bullmq::Result<RedisBackend> {
        RedisBackend::connect(&RedisOptions::new(url), queue.clone()).await
    }
}

/// Where the queue lives: the store's URL, and a connection to it for `queue`.
#[cfg(all(feature = "postgres", not(feature = "redis")))]
mod store {
    use bullmq::postgres::{PostgresBackend, PostgresOptions};

    pub(crate) const URL_VAR: &str = "DATABASE_URL";
    pub(crate) const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

    pub(crate) async fn connect(
        url: &str,
        queue: &bullmq::QueueName,
    ) -> bullmq::Result<PostgresBackend> {
        // The schema (`bullmq`) is created or upgraded on first use; Node.js: `migrate: true`.
        PostgresBackend::connect(&PostgresOptions::new(url).migrate(true), queue.clone()).await
    }
}

use store::connect;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var(store::URL_VAR).unwrap_or_else(|_| store::DEFAULT_URL.into());
    let name = QueueName::new("quickstart")?;

    // The worker gets a connection of its own (it closes it when it closes).
    let worker_backend = connect(&url, &name).await?;
    let worker = Worker::new(
        name.clone(),
        worker_backend,
        WorkerOptions::new().concurrency(2),
        resize,
    )
    .await?;
    let mut events = worker.events();

    let queue = Queue::new(name.clone(), connect(&url, &name).await?);
    if !produce_with_node(&url, name.as_str()) {
        println!(
            "(Node.js producer not set up: run `npm ci --prefix tests/node`; adding from Rust)"
        );
        let opts = JobOptions::new()
            .attempts(3)
            .backoff(Backoff::exponential(Duration::from_millis(500)));
        let jobs = (1..=JOBS)
            .map(|i| BulkJob {
                name: "resize".to_owned(),
                data: json!({ "image": format!("photo-{i}.jpg"), "width": 320 * i }),
                opts: opts.clone(),
            })
            .collect();
        for job in queue.add_bulk(jobs).await? {
            println!("rust: added job {} ({})", job.id, job.data);
        }
    }

    let mut done = 0;
    while done < JOBS {
        match events.recv().await? {
            WorkerEvent::Progress { job_id, progress } => println!("job {job_id}: {progress}%"),
            WorkerEvent::Completed { job, return_value } => {
                done += 1;
                println!("job {} completed: {return_value}", job.id);
            }
            WorkerEvent::Failed { job, reason, .. } => println!("job {} failed: {reason}", job.id),
            WorkerEvent::Error(err) => println!("worker error: {err}"),
            _ => {}
        }
    }

    worker.close().await;
    queue.obliterate(true, 1000).await?;
    println!("done: {done} jobs processed by the Rust worker");
    Ok(())
}

/// Runs the Node.js producer, if Node.js and the pinned bullmq are installed.
fn produce_with_node(url: &str, queue: &str) -> bool {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    if !dir.join("node_modules/bullmq").is_dir() {
        return false;
    }
    let status = Command::new("node")
        .current_dir(&dir)
        .args(["quickstart-producer.mjs", queue, &JOBS.to_string()])
        .env_remove("DATABASE_URL")
        .env(store::URL_VAR, url)
        .status();
    matches!(status, Ok(s) if s.success())
}
