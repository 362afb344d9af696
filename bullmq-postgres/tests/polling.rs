//! `PostgresOptions::listen(false)`: workers poll instead of listening (for poolers where
//! `LISTEN` hears nothing), open no `LISTEN` connection, and still take every job.

#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bullmq_core::worker::{Worker, WorkerOptions};
use bullmq_core::{JobOptions, Queue, QueueName};
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx;
use serde_json::json;
use support::TestSchema;

#[tokio::test]
async fn a_polling_worker_takes_every_job_without_a_listen_connection() {
    let schema = TestSchema::new("polling");
    let name = QueueName::new("poll").unwrap();
    // Migrate first, with the default options.
    let queue = Queue::try_new(name.clone(), schema.backend("poll").await)
        .expect("the backend is bound to this queue");
    let polling = schema
        .options()
        .listen(false)
        .poll_interval(Duration::from_millis(50));
    let backend = PostgresBackend::connect(&polling, name.clone())
        .await
        .unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let seen = done.clone();
    let worker = Worker::new(
        name.clone(),
        backend,
        WorkerOptions::new()
            .name("poller")
            .drain_delay(Duration::from_secs(30)),
        move |_job, _cancel| {
            let seen = seen.clone();
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(json!(null))
            }
        },
    )
    .await
    .unwrap();
    // Fixed wait: lets the worker start polling before the jobs come (no signal tells it).
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..5 {
        queue
            .add("p", &json!({ "i": i }), JobOptions::new())
            .await
            .unwrap();
        // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Well inside the longest wait (10 s, which the 30 s drain delay is capped to): only
    // polling every 50 ms takes them this soon.
    bullmq_test_support::eventually(
        "the polling worker takes the 5 jobs",
        Duration::from_secs(3),
        || async { done.load(Ordering::SeqCst) >= 5 },
    )
    .await;
    // No connection LISTENs for this worker.
    let mut admin = support::admin().await;
    let named: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'poll%'",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(named, 0);
    worker.close().await;
}

#[test]
fn a_zero_poll_interval_is_refused() {
    let options = bullmq_postgres::PostgresOptions::new("postgres://localhost/db")
        .poll_interval(Duration::ZERO);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = runtime
        .block_on(PostgresBackend::connect(
            &options,
            QueueName::new("q").unwrap(),
        ))
        .unwrap_err();
    assert!(err.to_string().contains("poll_interval"), "{err}");
}
