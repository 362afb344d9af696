//! A job scheduler: one upsert makes a job every 200 ms, at most three times (`limit`),
//! each from the same template; upserting again with the same id changes the schedule.
//!
//! `cargo run --example scheduler_every --features scheduler` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;
use tokio::sync::mpsc;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let backend = env::redis("scheduler-every").await?;
    let schedulers = JobScheduler::new(backend.clone());
    let every = RepeatOptions::every(Duration::from_millis(200)).limit(3);
    let template = JobTemplate::named("ping").data(serde_json::json!({ "host": "db-1" }));
    schedulers.upsert("health-check", &every, template).await?;

    let (done, mut runs) = mpsc::unbounded_channel();
    let worker = Worker::new(
        QueueName::new("scheduler-every")?,
        backend,
        WorkerOptions::new(),
        move |job: ActiveJob<DefaultBackend>, _: CancellationToken| {
            let done = done.clone();
            async move {
                let _ = done.send((job.name.clone(), job.data.clone()));
                Ok(serde_json::Value::Null)
            }
        },
    )
    .await?;
    for run in 1..=3 {
        let (name, data) = runs.recv().await.ok_or("the worker stopped")?;
        println!("run {run}: {name} {data}");
    }
    schedulers.remove("health-check").await?;
    println!("schedulers left: {}", schedulers.count().await?);
    worker.close().await;
    Ok(())
}

// Output:
// run 1: ping {"host":"db-1"}
// run 2: ping {"host":"db-1"}
// run 3: ping {"host":"db-1"}
// schedulers left: 0
