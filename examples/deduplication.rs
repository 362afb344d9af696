//! Deduplication: jobs given the same deduplication id while the first is not finished are
//! not added again; the add answers with the job already there.
//!
//! `cargo run --example deduplication` (Redis at `REDIS_URL`).

use std::error::Error;

use bullmq::Deduplication;
use bullmq::prelude::*;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::redis("deduplication").await?)?;
    let once_per_user =
        |user: &str| JobOptions::new().deduplication(Deduplication::new(format!("reindex-{user}")));
    let first = queue.add("reindex", &"ada", once_per_user("ada")).await?;
    let again = queue.add("reindex", &"ada", once_per_user("ada")).await?;
    let other = queue.add("reindex", &"bob", once_per_user("bob")).await?;
    println!("first add: job {}", first.id);
    println!("same id again: job {}", again.id);
    println!("another user: job {}", other.id);
    println!("jobs waiting: {}", queue.count().await?);
    Ok(())
}

// Output:
// first add: job 1
// same id again: job 1
// another user: job 3
// jobs waiting: 2
