//! Enqueueing inside the caller's own transaction: the job exists if and only if that
//! transaction commits, and no worker can take it before.

#![allow(clippy::unwrap_used)]

mod support;

use bullmq_test_support::held::fetch_params;
use std::time::Duration;

use bullmq_core::backend::Transitions;
use bullmq_core::{BulkJob, JobId, JobOptions, Queue, QueueName};
use bullmq_postgres::sqlx::{self, Connection as _, PgConnection};
use bullmq_postgres::{AddInTransaction as _, PostgresBackend};
use serde_json::json;
use support::TestSchema;

/// The id of the job a worker would take from `queue` now, if any (it is then active).
async fn taken(queue: &Queue<PostgresBackend>) -> Option<JobId> {
    let fetch = fetch_params("t", Duration::from_secs(30), None);
    let next = queue.backend().move_to_active(&fetch).await.unwrap();
    next.job.map(|job| job.id)
}

/// `n` jobs with data `{"i": i}` and default options, the `i`th named `name(i)`.
fn bulk(n: u32, name: impl Fn(u32) -> String) -> Vec<BulkJob<serde_json::Value>> {
    (0..n)
        .map(|i| BulkJob {
            name: name(i),
            data: json!({ "i": i }),
            opts: JobOptions::new(),
        })
        .collect()
}

async fn queue(schema: &TestSchema, name: &str) -> Queue<PostgresBackend> {
    Queue::try_new(QueueName::new(name).unwrap(), schema.backend(name).await)
        .expect("the backend is bound to this queue")
}

/// A fresh schema `tag` with its queue "orders", and a connection of the caller's own to
/// open transactions on.
async fn orders(tag: &str) -> (TestSchema, Queue<PostgresBackend>, PgConnection) {
    let schema = TestSchema::new(tag);
    let queue = queue(&schema, "orders").await;
    (schema, queue, support::admin().await)
}

#[tokio::test]
async fn a_job_added_in_a_transaction_exists_only_after_commit() {
    let (_schema, queue, mut conn) = orders("tx_commit").await;
    sqlx::raw_sql("CREATE TEMP TABLE orders (id int)")
        .execute(&mut conn)
        .await
        .unwrap();
    let path_before: String = sqlx::query_scalar("SELECT current_setting('search_path')")
        .fetch_one(&mut conn)
        .await
        .unwrap();

    let mut tx = conn.begin().await.unwrap();
    sqlx::query("INSERT INTO orders VALUES (42)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let job = queue
        .add_in(
            &mut tx,
            "receipt",
            &json!({"order": 42}),
            JobOptions::new().attempts(2),
        )
        .await
        .unwrap();
    // The caller's search_path is theirs again.
    let path_inside: String = sqlx::query_scalar("SELECT current_setting('search_path')")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(path_inside, path_before);
    // Invisible to everyone else, workers included, until commit.
    assert!(queue.get_job(&job.id).await.unwrap().is_none());
    assert_eq!(taken(&queue).await, None);

    tx.commit().await.unwrap();
    let stored = queue.get_job(&job.id).await.unwrap().unwrap();
    assert_eq!(stored.data, r#"{"order":42}"#);
    assert_eq!(stored.opts.attempts, Some(2));
    assert_eq!(taken(&queue).await, Some(job.id));
}

#[tokio::test]
async fn a_rolled_back_transaction_leaves_no_job() {
    let (_schema, queue, mut conn) = orders("tx_rollback").await;
    let mut tx = conn.begin().await.unwrap();
    let one = queue
        .add_in(&mut tx, "a", &json!({}), JobOptions::new())
        .await
        .unwrap();
    let bulk = queue
        .add_bulk_in(&mut tx, bulk(3, |_| "b".to_owned()))
        .await
        .unwrap();
    assert_eq!(bulk.len(), 3);
    tx.rollback().await.unwrap();
    assert!(queue.get_job(&one.id).await.unwrap().is_none());
    assert_eq!(queue.count().await.unwrap(), 0);
    assert_eq!(taken(&queue).await, None);
}

#[tokio::test]
async fn add_bulk_in_commits_all_together_and_bad_input_writes_nothing() {
    let (_schema, queue, mut conn) = orders("tx_bulk").await;
    let mut tx = conn.begin().await.unwrap();
    let jobs = queue
        .add_bulk_in(&mut tx, bulk(5, |i| format!("j{i}")))
        .await
        .unwrap();
    // A job that breaks an option rule is refused before anything is sent.
    let refused = queue
        .add_in(&mut tx, "bad", &json!({}), JobOptions::new().job_id("0"))
        .await;
    assert!(refused.is_err(), "{refused:?}");
    tx.commit().await.unwrap();
    assert_eq!(queue.count().await.unwrap(), 5);
    for job in jobs {
        assert!(queue.get_job(&job.id).await.unwrap().is_some());
    }
}

#[tokio::test]
async fn a_waiting_worker_is_woken_at_commit_not_before() {
    use bullmq_core::worker::{Worker, WorkerOptions};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let (schema, queue, mut conn) = orders("tx_notify").await;
    let processed = Arc::new(AtomicUsize::new(0));
    let seen = processed.clone();
    // A long drain delay: only the commit's NOTIFY can wake the worker in time.
    let worker = Worker::new(
        QueueName::new("orders").unwrap(),
        schema.backend("orders").await,
        WorkerOptions::new().drain_delay(Duration::from_secs(60)),
        move |_job, _cancel| {
            let seen = seen.clone();
            async move {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(json!("sent"))
            }
        },
    )
    .await
    .unwrap();
    // Fixed wait: lets the worker start waiting before the job is added.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut tx = conn.begin().await.unwrap();
    let job = queue
        .add_in(&mut tx, "receipt", &json!({}), JobOptions::new())
        .await
        .unwrap();
    // Fixed wait: the uncommitted job must stay untaken this long (an absence, which no
    // condition can announce).
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(processed.load(Ordering::SeqCst), 0, "taken before commit");
    tx.commit().await.unwrap();

    // Far inside the longest wait (10 s, which the drain delay is capped to).
    // The processor runs before the job is moved to completed, so wait for
    // the stored return value rather than for the processor's counter.
    bullmq_test_support::eventually(
        "the job completed, woken by the commit's NOTIFY",
        Duration::from_secs(3),
        || async {
            let stored = queue.get_job(&job.id).await.unwrap().unwrap();
            stored.return_value.is_some()
        },
    )
    .await;
    let stored = queue.get_job(&job.id).await.unwrap().unwrap();
    assert_eq!(stored.return_value.as_deref(), Some("\"sent\""));
    assert_eq!(processed.load(Ordering::SeqCst), 1);
    worker.close().await;
}
