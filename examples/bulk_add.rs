//! Adding many jobs at once: `add_bulk` prepares and checks every job first, then adds them
//! in one round trip (pipelined on Redis, one statement on PostgreSQL).
//!
//! `cargo run --example bulk_add` (Redis at `REDIS_URL`).

use std::error::Error;

use bullmq::BulkJob;
use bullmq::prelude::*;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("bulk-add").await?)?;
    let jobs = ["ada@example.com", "bob@example.com", "eve@example.com"]
        .into_iter()
        .map(|to| BulkJob {
            name: "welcome".to_owned(),
            data: serde_json::json!({ "to": to }),
            opts: JobOptions::new().attempts(3),
        })
        .collect();
    let added = queue.add_bulk(jobs).await?;
    for job in &added {
        println!("job {} {} {}", job.id, job.name, job.data);
    }
    println!("jobs waiting: {}", queue.count().await?);

    // A job that breaks a rule refuses the whole bulk before anything is written.
    let bad = vec![BulkJob {
        name: "welcome".to_owned(),
        data: serde_json::json!({}),
        opts: JobOptions::new().priority(u32::MAX),
    }];
    match queue.add_bulk(bad).await {
        Err(bullmq::Error::Bulk(err)) => println!(
            "refused: job {:?} ({} added)",
            err.to_retry(),
            err.added.len()
        ),
        Err(err) => println!("failed: {err}"),
        Ok(_) => println!("unexpectedly added"),
    }
    println!("jobs waiting: {}", queue.count().await?);
    Ok(())
}

// Output:
// job 1 welcome {"to":"ada@example.com"}
// job 2 welcome {"to":"bob@example.com"}
// job 3 welcome {"to":"eve@example.com"}
// jobs waiting: 3
// refused: job [0] (0 added)
// jobs waiting: 3
