//! Redis over TLS: a `rediss://` URL, and the certificate of the private CA that signed the
//! server's (without it, only the public roots bundled with the crate are trusted, and a
//! server signed by a private CA is refused). Needs the `tls` feature.
//!
//! `REDIS_TLS_URL=rediss://127.0.0.1:6380 REDIS_CA=ca.crt cargo run --example tls --features tls`

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{Prefix, QueueEventsOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let url = std::env::var("REDIS_TLS_URL").unwrap_or_else(|_| "rediss://127.0.0.1:6380".into());
    let ca = std::fs::read(std::env::var("REDIS_CA").unwrap_or_else(|_| "ca.crt".into()))?;
    let prefix = Prefix::new(std::env::var("BULLMQ_PREFIX").unwrap_or_else(|_| "bull".into()))?;
    let name = QueueName::new("reports")?;

    // The bundled public roots do not know a private CA: the handshake is refused.
    let untrusted = RedisOptions::new(url.as_str()).prefix(prefix.clone());
    match RedisBackend::connect(&untrusted, name.clone()).await {
        Ok(_) => println!("connected without the CA?"),
        Err(_) => println!("without the CA: refused"),
    }

    let options = RedisOptions::new(url.as_str())
        .prefix(prefix)
        .ca_certificate(ca);
    let queue = Queue::from_backend(RedisBackend::connect(&options, name).await?)?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<RedisBackend>, _: CancellationToken| async move {
            let month: String = job.data_as()?;
            Ok(format!("report for {month}"))
        },
    )
    .await?;
    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let job = queue.add("monthly", &"2026-11", JobOptions::new()).await?;
    let result = events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await?;
    println!("with the CA: {result}");
    worker.close().await;
    Ok(())
}

// Output:
// without the CA: refused
// with the CA: "report for 2026-11"
