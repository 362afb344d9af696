//! Keeping finished jobs: `remove_on_complete` and `remove_on_fail` say how many (or how
//! old) finished jobs stay stored; here the two newest completed jobs, and no failed one.
//!
//! `cargo run --example retention` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::QueueEventsOptions;
use bullmq::job::{JobState, JobType};
use bullmq::prelude::*;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("retention").await?)?.default_job_options(
        JobOptions::new()
            .remove_on_complete(KeepJobs::Number(2))
            .remove_on_fail(KeepJobs::RemoveAll),
    );
    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let n: u32 = job.data_as()?;
            if n == 0 {
                return Err(JobError::failed("zero"));
            }
            Ok(serde_json::json!(n))
        },
    )
    .await?;
    let mut last = None;
    for n in [1, 2, 3, 4, 0] {
        last = Some(queue.add("count", &n, JobOptions::new()).await?.id);
    }
    let last = last.ok_or("no job")?;
    let _ = events
        .wait_until_finished(&last, Some(Duration::from_secs(10)))
        .await;

    let kinds = [
        JobType::State(JobState::Completed),
        JobType::State(JobState::Failed),
    ];
    for (kind, count) in queue.get_job_counts(&kinds).await? {
        println!("{}: {count}", kind.as_str());
    }
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// completed: 2
// failed: 0
