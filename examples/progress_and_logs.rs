//! Progress and logs: a processor reports how far it got and writes log lines; both are
//! stored with the job, where a dashboard or a Node.js process reads them.
//!
//! `cargo run --example progress_and_logs` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;
use bullmq::{QueueEventsOptions, Range};

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("progress-and-logs").await?)?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let files: Vec<String> = job.data_as()?;
            for (done, file) in files.iter().enumerate() {
                job.log(&format!("uploaded {file}")).await?;
                let percent = (done + 1) * 100 / files.len();
                job.update_progress(&serde_json::json!({ "percent": percent }))
                    .await?;
            }
            Ok(serde_json::json!(files.len()))
        },
    )
    .await?;

    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let job = queue
        .add("upload", &["a.png", "b.png", "c.png"], JobOptions::new())
        .await?;
    events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await?;
    let done = queue.get_job(&job.id).await?.ok_or("job gone")?;
    println!("progress {}", done.progress);
    let logs = queue
        .get_job_logs(
            &job.id,
            Range {
                asc: true,
                ..Range::ALL
            },
        )
        .await?;
    for line in logs.logs {
        println!("log: {line}");
    }
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// progress {"percent":100}
// log: uploaded a.png
// log: uploaded b.png
// log: uploaded c.png
