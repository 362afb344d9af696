//! A worker service as it runs on Kubernetes: settings from the environment, a supervised
//! pool of workers, liveness and readiness probes, Prometheus metrics, the autoscaling signal
//! KEDA's `metrics-api` scaler reads, and a graceful shutdown on `SIGTERM`.
//!
//! ```sh
//! QUEUE_URL=redis://127.0.0.1:6379 WORKER_COUNT=4 CONCURRENCY=50 \
//!   cargo run --example k8s_worker --features postgres
//! curl -s localhost:8080/readyz; curl -s localhost:8080/metrics; curl -s localhost:8080/scaling
//! ```
//!
//! | variable | default | what |
//! |---|---|---|
//! | `QUEUE_URL` | `redis://127.0.0.1:6379` | the store (`redis://`, `rediss://`, `redis+cluster://`, `redis+sentinel://`, `postgres://`) |
//! | `QUEUE_NAME` | `jobs` | the queue |
//! | `QUEUE_PREFIX` / `QUEUE_SCHEMA` | `bull` / `bullmq` | the Redis key prefix / the PostgreSQL schema |
//! | `WORKER_COUNT` | `2` | workers in this process |
//! | `CONCURRENCY` | `50` | jobs each worker runs at once |
//! | `CLOSE_TIMEOUT_SECS` | `25` | how long jobs in flight may finish on `SIGTERM` (keep it under `terminationGracePeriodSeconds`) |
//! | `LISTEN` | `0.0.0.0:8080` | where the probes and metrics are served |
//! | `WORK_MS` | `100` | how long each (simulated) job takes |
//!
//! The manifests beside this file (`deploy/`) run it; docs/guides/scaling.md explains them.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use bullmq::pool::WorkerPool;
use bullmq::{
    ActiveJob, AnyBackend, BoxProcessor, CancellationToken, ConnectOptions, JobError, Prefix,
    Queue, QueueName, Shutdown, WorkerOptions,
};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

type Pool = WorkerPool<AnyBackend, BoxProcessor<AnyBackend>>;

/// What the HTTP handlers read.
struct App {
    pool: Pool,
    prometheus: PrometheusHandle,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String> {
    match std::env::var(name) {
        Ok(text) => text
            .parse()
            .map_err(|_| format!("{name}={text:?} is not valid: set it to a number or unset it")),
        Err(_) => Ok(default),
    }
}

/// The job: `WORK_MS` of work that stops early when the job is cancelled.
fn processor(work: Duration) -> BoxProcessor<AnyBackend> {
    BoxProcessor::new(
        move |job: ActiveJob<AnyBackend>, cancel: CancellationToken| async move {
            tokio::select! {
                () = tokio::time::sleep(work) => Ok(serde_json::json!({ "done": job.id.to_string() })),
                () = cancel.cancelled() => Err(JobError::failed(format!("cancelled: {:?}", job.cancel_reason()))),
            }
        },
    )
}

async fn healthz(State(app): State<Arc<App>>) -> StatusCode {
    if app.pool.health().await.is_live() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

async fn readyz(State(app): State<Arc<App>>) -> StatusCode {
    if app.pool.health().await.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

async fn metrics(State(app): State<Arc<App>>) -> String {
    // Reading the signals sets the queue's backlog, age and active gauges first.
    if let Err(err) = app.pool.queue().scaling_signals().await {
        eprintln!("scaling signals: {err}");
    }
    app.prometheus.render()
}

/// What KEDA's `metrics-api` scaler reads (`valueLocation: backlog`).
async fn scaling(State(app): State<Arc<App>>) -> Result<String, StatusCode> {
    match app.pool.queue().scaling_report().await {
        Ok(report) => Ok(report.to_json()),
        Err(_) => Err(StatusCode::SERVICE_UNAVAILABLE),
    }
}

async fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let url = std::env::var("QUEUE_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let name = QueueName::new(std::env::var("QUEUE_NAME").unwrap_or_else(|_| "jobs".to_owned()))?;
    let workers: usize = env_or("WORKER_COUNT", 2)?;
    let concurrency: usize = env_or("CONCURRENCY", 50)?;
    let close_timeout = Duration::from_secs(env_or("CLOSE_TIMEOUT_SECS", 25)?);
    let work = Duration::from_millis(env_or("WORK_MS", 100)?);
    let listen = std::env::var("LISTEN").unwrap_or_else(|_| "0.0.0.0:8080".to_owned());

    let mut connect = ConnectOptions::new(url).migrate(true);
    if let Ok(prefix) = std::env::var("QUEUE_PREFIX") {
        connect = connect.prefix(Prefix::new(prefix)?);
    }
    if let Ok(schema) = std::env::var("QUEUE_SCHEMA") {
        connect = connect.schema(schema);
    }
    let prometheus = PrometheusBuilder::new().install_recorder()?;
    let backend = connect.connect(name.as_str()).await?;
    let options = WorkerOptions::new()
        .concurrency(concurrency)
        .close_timeout(close_timeout);
    let pool = WorkerPool::builder(Queue::from_backend(backend)?, processor(work))
        .options(options)
        .size(workers)
        .build()
        .await?;
    let app = Arc::new(App { pool, prometheus });
    let routes = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/scaling", get(scaling))
        .with_state(Arc::clone(&app));
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!(
        "listening on {}, {workers} workers x {concurrency}",
        listener.local_addr()?
    );
    let server = tokio::spawn(async move { axum::serve(listener, routes).await });

    // SIGTERM (or ctrl-c): every worker stops taking jobs and finishes those in flight.
    let finished = Shutdown::new(close_timeout)
        .with(&app.pool)
        .on_signal()
        .await?;
    server.abort();
    println!("shut down; every job in flight finished: {finished}");
    Ok(finished)
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        // Jobs left past the deadline are picked up again by the stalled check elsewhere.
        Ok(false) => ExitCode::from(3),
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
