//! Only what is PostgreSQL-specific; the shared cases are the conformance suite's `admin.rs`.
//!
//! `Admin` on PostgreSQL, end to end: jobs are made and moved with upstream's own commands
//! (as Node.js's backend runs them), then each trait method is checked against the rows.

use std::time::Duration;

use crate::support::TestSchema;
use crate::support::jobs::{AddJob, activate, complete, fail, move_to_active, now_ms, state};
use bullmq_core::backend::{Admin, Batch};
use bullmq_core::job::FinishedState;
use bullmq_core::{JobId, JobState};
use bullmq_postgres::__private::sql::commands;
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx;

/// A Unix-ms timestamp as the trait's `u64`.
fn ms(at: i64) -> u64 {
    u64::try_from(at).expect("a timestamp after 1970")
}

/// Claims the next job as a worker whose limiter allows `limiter_max` jobs per second.
async fn activate_limited(
    b: &PostgresBackend,
    token: &str,
    limiter_max: Option<i32>,
) -> Option<String> {
    move_to_active(b, token, Some("w"), limiter_max).await
}

/// Adds a job, claims it and finishes it (`ok` completes, else fails) at `finished_on`.
async fn finished(b: &PostgresBackend, id: &str, ok: bool, finished_on: i64) {
    AddJob::new(id).add(b).await;
    let token = format!("t-{id}");
    assert_eq!(activate(b, &token).await.as_deref(), Some(id));
    if ok {
        complete(b, id, &token, "null", finished_on).await;
    } else {
        fail(b, id, &token, "boom", Some("[]"), finished_on).await;
    }
}

/// Ids of the queue's jobs, sorted.
async fn job_ids(b: &PostgresBackend) -> Vec<String> {
    sqlx::query_scalar("SELECT id FROM job WHERE queue = $1 ORDER BY id")
        .bind(b.queue().as_str())
        .fetch_all(b.connection().pool())
        .await
        .expect("read the jobs")
}

/// The queue's events of one kind, oldest first.
async fn events(b: &PostgresBackend, kind: &str) -> Vec<serde_json::Value> {
    sqlx::query_scalar("SELECT data FROM event WHERE queue = $1 AND event = $2 ORDER BY id")
        .bind(b.queue().as_str())
        .bind(kind)
        .fetch_all(b.connection().pool())
        .await
        .expect("read the events")
}

async fn meta_paused(b: &PostgresBackend) -> Option<String> {
    sqlx::query_scalar(commands::GET_QUEUE_META_FIELD.text)
        .bind(b.queue().as_str())
        .bind("paused")
        .fetch_optional(b.connection().pool())
        .await
        .expect("get_queue_meta_field")
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn pause_blocks_claims_and_resume_releases_them() {
    let (_schema, b) = TestSchema::with_backend("admin_pause", "q").await;
    AddJob::new("a").add(&b).await;

    b.pause(true).await.unwrap();
    assert_eq!(meta_paused(&b).await.as_deref(), Some("1"));
    assert_eq!(
        activate(&b, "t").await,
        None,
        "a paused queue hands out nothing"
    );
    assert_eq!(events(&b, "paused").await.len(), 1);

    b.pause(false).await.unwrap();
    assert_eq!(meta_paused(&b).await, None, "resume removes the flag");
    assert_eq!(events(&b, "resumed").await.len(), 1);
    assert_eq!(activate(&b, "t").await.as_deref(), Some("a"));
}

#[tokio::test]
async fn clean_waiting_and_delayed_by_added_time_skipping_scheduler_jobs() {
    let (_schema, b) = TestSchema::with_backend("admin_clean_wait", "q").await;
    let now = now_ms();
    AddJob::new("old").at(now - 5_000).add(&b).await;
    AddJob::new("new").add(&b).await;
    AddJob::new("sch")
        .at(now - 5_000)
        .scheduler("s")
        .add(&b)
        .await;
    AddJob::new("prio")
        .at(now - 5_000)
        .priority(2)
        .add(&b)
        .await;
    AddJob::new("late")
        .at(now - 5_000)
        .delay(60_000)
        .add(&b)
        .await;

    let before = ms(now - 1_000);
    let waiting = b
        .clean_jobs_by_state(JobState::Waiting, before, 0)
        .await
        .unwrap();
    assert_eq!(waiting, vec![JobId::from("old")]);
    let prio = b
        .clean_jobs_by_state(JobState::Prioritized, before, 0)
        .await
        .unwrap();
    assert_eq!(prio, vec![JobId::from("prio")]);
    let delayed = b
        .clean_jobs_by_state(JobState::Delayed, before, 0)
        .await
        .unwrap();
    assert_eq!(delayed, vec![JobId::from("late")]);
    assert!(
        b.clean_jobs_by_state(JobState::WaitingChildren, before, 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(job_ids(&b).await, ids(&["new", "sch"]));
}

#[tokio::test]
async fn retry_finished_jobs_moves_batches_back_to_wait() {
    let (_schema, b) = TestSchema::with_backend("admin_retry", "q").await;
    let now = now_ms();
    finished(&b, "f1", false, now - 3_000).await;
    finished(&b, "f2", false, now - 2_000).await;
    finished(&b, "f3", false, now + 60_000).await;
    finished(&b, "c1", true, now - 3_000).await;

    let before = ms(now);
    let retry = |state, count| b.retry_finished_jobs(state, count, before);
    assert_eq!(retry(FinishedState::Failed, 1).await.unwrap(), Batch::More);
    assert_eq!(
        state(&b, "f1").await.as_deref(),
        Some("waiting"),
        "oldest first"
    );
    assert_eq!(state(&b, "f2").await.as_deref(), Some("failed"));
    assert_eq!(retry(FinishedState::Failed, 1).await.unwrap(), Batch::More);
    assert_eq!(retry(FinishedState::Failed, 1).await.unwrap(), Batch::Done);
    assert_eq!(state(&b, "f2").await.as_deref(), Some("waiting"));
    assert_eq!(
        state(&b, "f3").await.as_deref(),
        Some("failed"),
        "finished after the cut-off"
    );
    assert_eq!(state(&b, "c1").await.as_deref(), Some("completed"));

    let attempts: i32 =
        sqlx::query_scalar("SELECT attempts_made FROM job WHERE queue = 'q' AND id = 'f1'")
            .fetch_one(b.connection().pool())
            .await
            .unwrap();
    assert_eq!(attempts, 0, "a retried job starts over");

    assert_eq!(
        retry(FinishedState::Completed, 10).await.unwrap(),
        Batch::More
    );
    assert_eq!(state(&b, "c1").await.as_deref(), Some("waiting"));
    assert_eq!(
        retry(FinishedState::Completed, 10).await.unwrap(),
        Batch::Done
    );
}

#[tokio::test]
async fn set_rate_limit_then_remove_the_key() {
    let (_schema, b) = TestSchema::with_backend("admin_rate", "q").await;
    AddJob::new("a").add(&b).await;
    assert!(!b.remove_rate_limit_key().await.unwrap(), "no window yet");

    let before = now_ms();
    b.set_rate_limit(Duration::from_secs(30)).await.unwrap();
    let expire: i64 = sqlx::query_scalar("SELECT expire_at_ms FROM rate_limit WHERE queue = 'q'")
        .fetch_one(b.connection().pool())
        .await
        .unwrap();
    assert!(
        (before + 30_000..=now_ms() + 30_000).contains(&expire),
        "{expire}"
    );
    let ttl: i64 = sqlx::query_scalar(commands::GET_RATE_LIMIT_TTL.text)
        .bind("q")
        .bind(0_i32)
        .bind(now_ms())
        .fetch_one(b.connection().pool())
        .await
        .unwrap();
    assert!(ttl > 25_000, "rate limited: {ttl}");
    assert_eq!(
        activate_limited(&b, "t", Some(10)).await,
        None,
        "a rate-limited queue hands out nothing"
    );

    assert!(b.remove_rate_limit_key().await.unwrap());
    assert!(!b.remove_rate_limit_key().await.unwrap());
    assert_eq!(
        activate_limited(&b, "t", Some(10)).await.as_deref(),
        Some("a")
    );
}

#[tokio::test]
async fn remove_deprecated_priority_key_is_unsupported() {
    let (_schema, b) = TestSchema::with_backend("admin_prio_key", "q").await;
    let err = b.remove_deprecated_priority_key().await.unwrap_err();
    assert!(
        matches!(
            err,
            bullmq_core::Error::Unsupported {
                operation: "removeDeprecatedPriorityKey",
                backend: "postgres"
            }
        ),
        "{err:?}"
    );
}
