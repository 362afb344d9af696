//! Choosing the store at run time: `bullmq::connect` reads the URL's scheme (`redis://`,
//! `rediss://`, `postgres://`) and gives an `AnyBackend`; the rest of the program is the
//! same on either store.
//!
//! `cargo run --example any_store --features postgres -- postgres://postgres@127.0.0.1:5432/test`
//! (the URL defaults to `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;
use bullmq::{ConnectOptions, QueueEventsOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let url = std::env::args().nth(1).unwrap_or_else(|| {
        std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
    });
    let mut options = ConnectOptions::new(url).migrate(true);
    if let Ok(prefix) = std::env::var("BULLMQ_PREFIX") {
        options = options.prefix(bullmq::Prefix::new(prefix)?);
    }
    if let Ok(schema) = std::env::var("BULLMQ_SCHEMA") {
        options = options.schema(schema);
    }
    let backend = options.connect("any-store").await?;
    let store = match backend {
        AnyBackend::Redis(_) => "Redis",
        AnyBackend::Postgres(_) => "PostgreSQL",
        _ => "another store",
    };
    println!("store: {store}");

    let queue = Queue::from_backend(backend.clone())?;
    let events = QueueEvents::new(backend.clone(), QueueEventsOptions::default())?;
    let worker = Worker::new(
        queue.name().clone(),
        backend,
        WorkerOptions::new(),
        |job: ActiveJob<AnyBackend>, _: CancellationToken| async move {
            let name: String = job.data_as()?;
            Ok(serde_json::json!(format!("hello, {name}")))
        },
    )
    .await?;
    let job = queue.add("greet", &"world", JobOptions::new()).await?;
    let greeting = events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await?;
    println!("the job returned {greeting}");
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// store: Redis
// the job returned "hello, world"
