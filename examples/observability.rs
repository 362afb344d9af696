//! Metrics for Prometheus and a `/healthz` probe beside a worker.
//!
//! `GET /metrics` serves this process's metrics (the `metrics` facade rendered by
//! `metrics-exporter-prometheus`: `bullmq_jobs_completed`, `bullmq_job_duration`, …) followed by
//! the queue's own Node-identical `export_prometheus_metrics` text; `GET /healthz` answers 200
//! with the worker's health while it is ready, 503 otherwise. Spans go to stdout through
//! `tracing-subscriber`'s fmt layer (add `tracing-opentelemetry` to export them).
//!
//! Run with `cargo run --example observability` (Redis at `REDIS_URL`, default
//! `redis://127.0.0.1:6379`), then `curl 127.0.0.1:9464/metrics` and `curl
//! 127.0.0.1:9464/healthz`. It adds a job every 100 ms and stops after `EXAMPLE_SECS` (60).

use std::sync::Arc;
use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{JobOptions, Queue, QueueName, Worker, WorkerOptions};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // Errors are printed with `Display`: one sentence, no internals, no password.
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_target(false).init();
    let prometheus = metrics_exporter_prometheus::PrometheusBuilder::new().install_recorder()?;

    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let name = QueueName::new("observability-example")?;
    let options = RedisOptions::new(url);
    let queue = Arc::new(Queue::from_backend(
        RedisBackend::connect(&options, name.clone()).await?,
    )?);
    let worker = Arc::new(
        Worker::new(
            name.clone(),
            RedisBackend::connect(&options, name).await?,
            WorkerOptions::new().concurrency(10),
            |job, _cancel| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                if job.attempts_made == 0 && job.data.contains("\"fail\":true") {
                    return Err(bullmq::JobError::failed("first attempt fails"));
                }
                Ok(json!("done"))
            },
        )
        .await?,
    );

    let listener = TcpListener::bind("127.0.0.1:9464").await?;
    println!("serving http://127.0.0.1:9464/metrics and /healthz");
    let server = {
        let (queue, worker) = (Arc::clone(&queue), Arc::clone(&worker));
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut request = [0u8; 1024];
                let n = socket.read(&mut request).await.unwrap_or(0);
                let line = String::from_utf8_lossy(&request[..n]);
                let (status, body) = if line.starts_with("GET /metrics") {
                    let ours = queue
                        .export_prometheus_metrics(&[])
                        .await
                        .unwrap_or_default();
                    ("200 OK", format!("{}{ours}", prometheus.render()))
                } else if line.starts_with("GET /healthz") {
                    let health = worker.health();
                    let status = if health.is_ready() {
                        "200 OK"
                    } else {
                        "503 Service Unavailable"
                    };
                    (status, format!("{health:?}\n"))
                } else {
                    ("404 Not Found", String::new())
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            }
        })
    };

    let secs: u64 = std::env::var("EXAMPLE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let mut i = 0u64;
    while tokio::time::Instant::now() < deadline {
        let opts = JobOptions::new().attempts(2);
        queue
            .add("work", &json!({"i": i, "fail": i.is_multiple_of(5)}), opts)
            .await?;
        // Node's `recordJobCountsMetric`: a gauge per state.
        if i.is_multiple_of(10) {
            queue.record_job_counts_metric(&[]).await?;
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.abort();
    worker.close().await;
    Ok(())
}
