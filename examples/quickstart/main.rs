//! Quick start: a Rust worker processes a queue that a Node.js BullMQ 6.7.6 producer fills
//! (or, when Node.js is not set up, a Rust producer), printing progress as it goes.
//!
//! ```sh
//! npm ci --prefix tests/node      # once, for the Node.js producer (optional)
//! cargo run --example quickstart  # Redis at REDIS_URL, default redis://127.0.0.1:6379
//! # The same program on PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test):
//! cargo run --example quickstart --no-default-features --features postgres
//! ```
//!
//! With `REDIS_URL` unset and nothing answering at the default URL, it starts a private
//! `redis-server` (temporary directory, free port, nothing saved) and stops it when it exits.
//!
//! Only [`connect`] knows the store: everything else is written against
//! [`bullmq::DefaultBackend`], which the features choose.

use std::error::Error;
use std::path::Path;
use std::process::{Command, ExitCode};
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

#[path = "../support/redact.rs"]
mod redact;
mod server;

/// Where the queue lives: the store's URL, and a connection to it for `queue`.
#[cfg(feature = "redis")]
mod store {
    use bullmq::redis::{RedisBackend, RedisOptions};

    use crate::server::{self, PrivateRedis};

    pub(crate) const URL_VAR: &str = "REDIS_URL";
    pub(crate) const NAME: &str = "Redis";
    const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

    /// `REDIS_URL`; else the default URL when something answers there; else a private
    /// redis-server, kept running as long as the returned guard lives.
    pub(crate) async fn url() -> Result<(String, Option<PrivateRedis>), server::StoreError> {
        if let Ok(url) = std::env::var(URL_VAR) {
            return Ok((url, None));
        }
        let default = server::default_url(DEFAULT_URL);
        if server::answers(&default, 6379) {
            return Ok((default, None));
        }
        let private = PrivateRedis::start().await?;
        println!(
            "Nothing answers at {} and REDIS_URL is unset: started a private redis-server at {} \
             (stopped when this example exits)",
            server::redacted(&default),
            private.url
        );
        Ok((private.url.clone(), Some(private)))
    }

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

    use crate::server;

    pub(crate) const URL_VAR: &str = "DATABASE_URL";
    pub(crate) const NAME: &str = "PostgreSQL";
    const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

    /// `DATABASE_URL`; else the default URL, when something answers there.
    pub(crate) async fn url() -> Result<(String, Option<()>), server::StoreError> {
        if let Ok(url) = std::env::var(URL_VAR) {
            return Ok((url, None));
        }
        let default = server::default_url(DEFAULT_URL);
        if server::answers(&default, 5432) {
            return Ok((default, None));
        }
        Err(server::StoreError::NoPostgres {
            url: server::redacted(&default),
            var: URL_VAR,
        })
    }

    pub(crate) async fn connect(
        url: &str,
        queue: &bullmq::QueueName,
    ) -> bullmq::Result<PostgresBackend> {
        // The schema (`bullmq`) is created or upgraded on first use; Node.js: `migrate: true`.
        PostgresBackend::connect(&PostgresOptions::new(url).migrate(true), queue.clone()).await
    }
}

use store::connect;

/// Errors are printed with `Display` (a sentence saying what failed and what to do), never
/// with `Debug` as `fn main() -> Result<…>` would.
#[tokio::main]
async fn main() -> ExitCode {
    // On ctrl-c `run` is dropped, and with it the private redis-server it may have started.
    let outcome = tokio::select! {
        outcome = run() => outcome,
        _ = tokio::signal::ctrl_c() => Err("interrupted".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("quickstart: {err}");
            ExitCode::FAILURE
        }
    }
}

/// A connection to the store at `url`, or an error naming the store and what to do.
async fn connect_to(url: &str, name: &QueueName) -> Result<DefaultBackend, Box<dyn Error>> {
    connect(url, name).await.map_err(|err| {
        format!(
            "cannot connect to {} at {} ({err}): start it there, or set {} to a running server",
            store::NAME,
            server::redacted(url),
            store::URL_VAR
        )
        .into()
    })
}

async fn run() -> Result<(), Box<dyn Error>> {
    // `_server` keeps a private redis-server (if one was started) running until `run` ends.
    let (url, _server) = store::url().await?;
    let name = QueueName::new("quickstart")?;

    // The worker gets a connection of its own (it closes it when it closes).
    let worker_backend = connect_to(&url, &name).await?;
    let worker = Worker::new(
        name.clone(),
        worker_backend,
        WorkerOptions::new().concurrency(2),
        resize,
    )
    .await?;
    let mut events = worker.events();

    let queue = Queue::from_backend(connect_to(&url, &name).await?)?;
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
    // Node.js is optional: without it (or its helpers) Rust adds the jobs.
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
