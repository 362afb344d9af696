//! A downstream program, built by `.ci/downstream.sh` against the packaged crates: it adds one
//! job and processes it with a `Worker`, on Redis (`REDIS_URL`) or, built with
//! `--no-default-features --features postgres`, on PostgreSQL (`DATABASE_URL`, in the schema
//! named by `SCHEMA`).

use std::process::ExitCode;
use std::time::Duration;

use bullmq::{
    ActiveJob, CancellationToken, DefaultBackend, JobError, JobOptions, Queue, QueueName, Worker,
    WorkerEvent, WorkerOptions,
};
use serde_json::{Value, json};

#[cfg(feature = "redis")]
async fn connect(queue: &QueueName) -> Result<DefaultBackend, Box<dyn std::error::Error>> {
    use bullmq::redis::{RedisBackend, RedisOptions};
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = bullmq::Prefix::new(&std::env::var("PREFIX").unwrap_or_else(|_| "bull".into()))?;
    Ok(RedisBackend::connect(&RedisOptions::new(url).prefix(prefix), queue.clone()).await?)
}

#[cfg(all(feature = "postgres", not(feature = "redis")))]
async fn connect(queue: &QueueName) -> Result<DefaultBackend, Box<dyn std::error::Error>> {
    use bullmq::postgres::{PostgresBackend, PostgresOptions, SchemaName};
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let schema = std::env::var("SCHEMA").unwrap_or_else(|_| "bullmq".into());
    let options = PostgresOptions::new(url)
        .schema(SchemaName::new(&schema)?)
        .migrate(true);
    Ok(PostgresBackend::connect(&options, queue.clone()).await?)
}

async fn double(
    job: ActiveJob<DefaultBackend>,
    _cancel: CancellationToken,
) -> Result<Value, JobError> {
    let n: u64 = job.data_as()?;
    Ok(json!(n * 2))
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let name = QueueName::new("downstream")?;
    let worker = Worker::new(name.clone(), connect(&name).await?, WorkerOptions::new(), double)
        .await?;
    let mut events = worker.events();
    let queue = Queue::from_backend(connect(&name).await?)?;
    let job = queue.add("double", &21, JobOptions::new()).await?;
    let outcome = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match events.recv().await {
                Ok(WorkerEvent::Completed { job: done, return_value }) if done.id == job.id => {
                    return Ok(return_value);
                }
                Ok(WorkerEvent::Failed { reason, .. }) => return Err(reason.to_string()),
                Ok(_) => {}
                Err(err) => return Err(err.to_string()),
            }
        }
    })
    .await
    .map_err(|_| "job not completed within 60 s")??;
    worker.close().await;
    queue.obliterate(true, 1000).await?;
    // The return value as the JSON text stored.
    if outcome != "42" {
        return Err(format!("job {} returned {outcome}, not 42", job.id).into());
    }
    println!("downstream: job {} processed by a Worker, returned {outcome}", job.id);
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("downstream: {err}");
            ExitCode::FAILURE
        }
    }
}
