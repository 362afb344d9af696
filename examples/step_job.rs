//! A step job: one job walks through its steps, saving the next step in its data, and
//! waits between two steps by moving itself to delayed (without using up an attempt), so a
//! retry or another worker resumes at the step it reached.
//!
//! `cargo run --example step_job` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::{Duration, SystemTime};

use bullmq::QueueEventsOptions;
use bullmq::prelude::*;
use serde::{Deserialize, Serialize};

#[path = "support/env.rs"]
mod env;

#[derive(Serialize, Deserialize)]
enum Step {
    Charge,
    WaitForBank,
    Ship,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("step-job").await?)?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let mut step: Step = job.data_as()?;
            loop {
                match step {
                    Step::Charge => {
                        println!("charging the card");
                        step = Step::WaitForBank;
                        job.update_data(&step).await?;
                    }
                    Step::WaitForBank => {
                        println!("waiting for the bank");
                        job.update_data(&Step::Ship).await?;
                        let later = SystemTime::now() + Duration::from_millis(200);
                        return Err(JobError::delay_until(later));
                    }
                    Step::Ship => {
                        println!("shipping");
                        return Ok(serde_json::json!("shipped"));
                    }
                }
            }
        },
    )
    .await?;

    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let job = queue.add("order", &Step::Charge, JobOptions::new()).await?;
    let result = events
        .wait_until_finished(&job.id, Some(Duration::from_secs(10)))
        .await?;
    let attempts = queue.get_job(&job.id).await?.map(|j| j.attempts_made);
    println!("result {result}, attempts made {attempts:?}");
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// charging the card
// waiting for the bank
// shipping
// result "shipped", attempts made Some(1)
