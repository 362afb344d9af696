//! A delayed job whose data does not matter: one that stays put while a test looks at it.

use std::time::Duration;

use bullmq_core::backend::Backend;
use bullmq_core::{Job, JobOptions, Queue};
use serde_json::json;

/// Adds job `name` with empty data to `queue`, delayed by `delay`.
pub async fn add_delayed<B: Backend>(queue: &Queue<B>, name: &str, delay: Duration) -> Job {
    queue
        .add(name, &json!({}), JobOptions::new().delay(delay))
        .await
        .expect("add a delayed job")
}
