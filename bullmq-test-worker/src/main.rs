//! `bullmq-test-worker`: a Rust worker in a process of its own, for the fault tests
//! (`tests/faults/redis_worker.rs`, `tests/faults/postgres_soak.rs`) to kill with SIGKILL,
//! freeze with SIGSTOP or stop with SIGTERM, which only a real process allows.
//!
//! Configured by environment: `REDIS_URL`, `PREFIX`, or with `STORE=postgres` `DATABASE_URL`
//! and `SCHEMA` (which the worker migrates, and whose server it waits for: up to 60 s when it
//! is down at the start), `QUEUE`, `NAME` (worker name),
//! `CONCURRENCY` (1), `LOCK_MS` (1000), `STALLED_MS` (100), `MAX_STALLED` (1), `DRAIN_MS` (500),
//! `JOB_MS` (processing time unless the job's data has `ms`), `CLOSE_MS` (how long a SIGTERM
//! waits for the jobs in flight, 5000) and `RUN_RETRY_MS` (the pause after a failed fetch;
//! the worker's default when unset).
//!
//! The processor sleeps, then returns `{"by": NAME}`; it stops early when its token is
//! cancelled (lost lock) and returns `{"by": NAME, "cancelled": true}`; that outcome is dropped
//! by the worker when it found the lock lost itself, and refused by the store otherwise. What
//! happens is printed to stdout, one line each: `ready`, `active <id>`,
//! `completed <id>`, `failed <id> <reason>`, `stalled <id>`, `lost <id>`,
//! `error script <command> <code>` or `error <text>`, and `closed <all finished>` after a
//! SIGTERM.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use bullmq::backend::Backend;
use bullmq::postgres::{PostgresBackend, PostgresOptions, SchemaName};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{Error, Prefix, QueueName, Worker, WorkerEvent, WorkerOptions};
use serde_json::json;
use tokio::signal::unix::{SignalKind, signal};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn env_ms(name: &str, default: u64) -> Result<Duration, String> {
    let text = env_or(name, &default.to_string());
    text.parse()
        .map(Duration::from_millis)
        .map_err(|e| format!("{name}={text:?}: {e}"))
}

fn env_num<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    match std::env::var(name) {
        Ok(text) => text.parse().map_err(|e| format!("{name}={text:?}: {e}")),
        Err(_) => Ok(default),
    }
}

/// Prints one line and flushes it, so the test reads it while it happens.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn describe(event: &WorkerEvent) -> Option<String> {
    Some(match event {
        WorkerEvent::Active { job } => format!("active {}", job.id),
        WorkerEvent::Completed { job, .. } => format!("completed {}", job.id),
        WorkerEvent::Failed { job, reason, .. } => format!("failed {} {reason}", job.id),
        WorkerEvent::Stalled { job_id } => format!("stalled {job_id}"),
        WorkerEvent::LockLost { job_id } => format!("lost {job_id}"),
        WorkerEvent::Error(err) => match &**err {
            Error::Script(s) => format!("error script {} {:?}", s.command, s.code),
            other => format!("error {}", other.to_string().replace('\n', " ")),
        },
        _ => return None,
    })
}

/// The PostgreSQL backend of `DATABASE_URL`, retried while the server is down (a worker
/// restarted by a fault test may start during a server restart).
async fn postgres(url: String, queue: &QueueName) -> Result<PostgresBackend, String> {
    let mut options = PostgresOptions::new(url)
        .migrate(true)
        .connect_timeout(Duration::from_secs(2))
        .poll_interval(Duration::from_millis(100));
    if let Ok(schema) = std::env::var("SCHEMA") {
        options = options.schema(SchemaName::new(&schema).map_err(|e| e.to_string())?);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        match PostgresBackend::connect(&options, queue.clone()).await {
            Ok(backend) => return Ok(backend),
            Err(e) if std::time::Instant::now() >= deadline => return Err(e.to_string()),
            // Retry interval while the server is down.
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

async fn run() -> Result<(), String> {
    let queue = QueueName::new(env_or("QUEUE", "faults")).map_err(|e| e.to_string())?;
    // Chosen by name, not by `DATABASE_URL` being set: CI exports both services' URLs to every
    // test, and the Redis fault tests' workers must stay on Redis.
    if std::env::var("STORE").as_deref() == Ok("postgres") {
        let url = std::env::var("DATABASE_URL")
            .map_err(|_| "STORE=postgres needs DATABASE_URL".to_owned())?;
        return serve(queue.clone(), postgres(url, &queue).await?).await;
    }
    let mut options = RedisOptions::new(env_or("REDIS_URL", "redis://127.0.0.1:6379"));
    if let Ok(prefix) = std::env::var("PREFIX") {
        options = options.prefix(Prefix::new(&prefix).map_err(|e| e.to_string())?);
    }
    let backend = RedisBackend::connect(&options, queue.clone())
        .await
        .map_err(|e| e.to_string())?;
    serve(queue, backend).await
}

/// Runs the worker on `backend` until SIGTERM.
async fn serve<B: Backend>(queue: QueueName, backend: B) -> Result<(), String> {
    let name = env_or("NAME", "test-worker");
    let job_time = env_ms("JOB_MS", 0)?;
    let opts = WorkerOptions::new()
        .autorun(false)
        .name(name.clone())
        .concurrency(env_num("CONCURRENCY", 1)?)
        .lock_duration(env_ms("LOCK_MS", 1000)?)
        .stalled_interval(env_ms("STALLED_MS", 100)?)
        .max_stalled_count(env_num("MAX_STALLED", 1)?)
        .drain_delay(env_ms("DRAIN_MS", 500)?);
    let opts = match std::env::var("RUN_RETRY_MS") {
        Ok(_) => opts.run_retry_delay(env_ms("RUN_RETRY_MS", 0)?),
        Err(_) => opts,
    };
    let by = name.clone();
    let worker = Worker::new(queue, backend, opts, move |job, cancel| {
        let by = by.clone();
        async move {
            let data: serde_json::Value = job.data_as()?;
            let ms = data["ms"].as_u64().map_or(job_time, Duration::from_millis);
            tokio::select! {
                () = tokio::time::sleep(ms) => Ok(json!({ "by": by })),
                () = cancel.cancelled() => Ok(json!({ "by": by, "cancelled": true })),
            }
        }
    })
    .await
    .map_err(|e| e.to_string())?;
    let mut events = worker.events();
    tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            if let Some(line) = describe(&event) {
                say(&line);
            }
        }
    });
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    worker.run().map_err(|e| e.to_string())?;
    say("ready");
    term.recv().await;
    let finished = worker.close_timeout(env_ms("CLOSE_MS", 5000)?).await;
    say(&format!("closed {finished}"));
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    if let Err(err) = run().await {
        eprintln!("bullmq-test-worker: {err}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
