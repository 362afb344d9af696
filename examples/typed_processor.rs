//! Typed end to end: a producer bound to its job data type (`queue.typed::<Order>()`) and a
//! processor that receives an `Order` and returns a `Receipt`. Sending anything else does
//! not compile; data another runtime wrote that does not fit fails the job, for good, with
//! the path of the field at fault.
//!
//! `cargo run --example typed_processor` (Redis at `REDIS_URL`).

use std::error::Error;
use std::time::Duration;

use bullmq::prelude::*;
use bullmq::{QueueEventsOptions, WaitError};
use serde::{Deserialize, Serialize};

#[path = "support/env.rs"]
mod env;

#[derive(Serialize, Deserialize)]
struct Order {
    customer: String,
    quantities: Vec<u32>,
}

#[derive(Serialize)]
struct Receipt {
    customer: String,
    items: u32,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let orders = Queue::from_backend(env::redis("typed-processor").await?)?.typed::<Order>();
    let backend = orders.queue().backend().clone();
    let processor = typed(
        |order: Order, _: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let items = order.quantities.iter().sum();
            Ok::<_, JobError>(Receipt {
                customer: order.customer,
                items,
            })
        },
    );
    let worker = Worker::builder(Queue::from_backend(backend.clone())?, processor)
        .build()
        .await?;
    let events = QueueEvents::new(backend, QueueEventsOptions::default())?;
    let ttl = Some(Duration::from_secs(10));

    let order = Order {
        customer: "ada".to_owned(),
        quantities: vec![2, 3],
    };
    let job = orders.add("receipt", &order, JobOptions::new()).await?;
    println!(
        "job {}: {}",
        job.id,
        events.wait_until_finished(&job.id, ttl).await?
    );

    // What a Node.js producer with a bug might send: a quantity as text.
    let wrong = serde_json::json!({ "customer": "bob", "quantities": [1, "two"] });
    let job = orders
        .queue()
        .add("receipt", &wrong, JobOptions::new().attempts(3))
        .await?;
    match events.wait_until_finished(&job.id, ttl).await {
        Err(WaitError::Failed { reason, .. }) => println!("job {}: {reason}", job.id),
        other => println!("job {}: unexpected {other:?}", job.id),
    }
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// job 1: {"customer":"ada","items":5}
// job 2: the job's data does not fit typed_processor::Order at `quantities[1]`: invalid type: string "two", expected u32 at line 1 column 39
