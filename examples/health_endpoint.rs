//! A readiness endpoint: `/readyz` answers 200 while the worker runs over healthy
//! connections and 503 once it is closed, what a load balancer or Kubernetes probe reads.
//!
//! `cargo run --example health_endpoint` (Redis at `REDIS_URL`).

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Router, routing::get};
use bullmq::prelude::*;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

#[path = "support/env.rs"]
mod env;

/// Whether the worker is ready, asked afresh at each request.
type Probe = Arc<dyn Fn() -> bool + Send + Sync>;

async fn readyz(State(ready): State<Probe>) -> StatusCode {
    if ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

/// `GET path` on `addr`: the status line's code.
async fn get_status(addr: std::net::SocketAddr, path: &str) -> Result<String, Box<dyn Error>> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response.lines().next().unwrap_or_default().to_owned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("health-endpoint").await?)?;
    let worker = Arc::new(
        Worker::from_queue(
            &queue,
            WorkerOptions::new(),
            |_: ActiveJob<DefaultBackend>, _: CancellationToken| async {
                Ok(serde_json::Value::Null)
            },
        )
        .await?,
    );
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let probe: Probe = {
        let worker = Arc::clone(&worker);
        Arc::new(move || worker.health().is_ready())
    };
    let app = Router::new()
        .route("/readyz", get(readyz))
        .with_state(probe);
    tokio::spawn(async move { axum::serve(listener, app).await });

    // The worker's loop starts right after it is built; wait for its first round trip.
    for _ in 0..100 {
        if worker.health().is_ready() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("running: {}", get_status(addr, "/readyz").await?);
    worker.close().await;
    println!("closed: {}", get_status(addr, "/readyz").await?);
    Ok(())
}

// Output:
// running: HTTP/1.1 200 OK
// closed: HTTP/1.1 503 Service Unavailable
