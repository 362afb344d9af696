//! Only what is PostgreSQL-specific; the shared cases are the conformance suite's `mutations.rs`.
//!
//! `JobMutations` on PostgreSQL, end to end: jobs and flows are made and moved with upstream's
//! own commands (as Node.js's backend runs them), then each trait method is checked against
//! the rows, refusals included.

use std::time::Duration;

use crate::support::TestSchema;
use crate::support::jobs::{
    self, AddJob, activate, column, flow_entry, id, now_ms, refused, state,
};
use bullmq_core::ScriptErrorCode;
use bullmq_core::backend::JobMutations;
use bullmq_postgres::__private::sql::commands;
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx;
use serde_json::{Value, json};

/// Adds parent `p` waiting for children `children` (roots first, as Node.js orders them).
async fn add_flow(b: &PostgresBackend, parent: &str, children: &[&str]) {
    let mut entries = vec![flow_entry("q", parent, None, true)];
    entries.extend(
        children
            .iter()
            .map(|c| flow_entry("q", c, Some(("q", parent)), false)),
    );
    let ids = jobs::add_flow(b, entries).await;
    assert_eq!(ids.len(), children.len() + 1, "{ids:?}");
}

/// A numeric column of job `id`'s row, which must be set.
async fn number(b: &PostgresBackend, id: &str, name: &str) -> i64 {
    let text = column(b, id, name).await.flatten();
    text.and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{id}.{name} is not a number"))
}

async fn logs(b: &PostgresBackend, id: &str) -> Vec<String> {
    sqlx::query_scalar(commands::GET_JOB_LOGS_ASC.text)
        .bind(b.queue().as_str())
        .bind(id)
        .bind(0_i64)
        .bind(100_i64)
        .fetch_all(b.connection().pool())
        .await
        .expect("get_job_logs_asc")
}

#[tokio::test]
async fn update_data_replaces_the_payload_or_refuses_a_missing_job() {
    let (_schema, b) = TestSchema::with_backend("mut_data", "q").await;
    AddJob::new("a").add(&b).await;

    b.update_data(&id("a"), r#"{"x":[1,2]}"#).await.unwrap();
    assert_eq!(
        column(&b, "a", "data").await.flatten().as_deref(),
        Some(r#"{"x": [1, 2]}"#)
    );

    let err = refused(
        b.update_data(&id("nope"), "{}").await,
        ScriptErrorCode::JobNotFound,
    );
    assert_eq!(err.command, "updateData");
    assert_eq!(err.job_id.as_deref(), Some("nope"));
}

#[tokio::test]
async fn update_progress_stores_it_and_emits_an_event() {
    let (_schema, b) = TestSchema::with_backend("mut_progress", "q").await;
    AddJob::new("a").add(&b).await;

    b.update_progress(&id("a"), &json!({"pct": 42}))
        .await
        .unwrap();
    assert_eq!(
        column(&b, "a", "progress").await.flatten().as_deref(),
        Some(r#"{"pct": 42}"#)
    );
    b.update_progress(&id("a"), &json!(7)).await.unwrap();
    assert_eq!(
        column(&b, "a", "progress").await.flatten().as_deref(),
        Some("7")
    );
    let events: Vec<Value> = sqlx::query_scalar(
        "SELECT data FROM event WHERE queue = 'q' AND event = 'progress' ORDER BY id",
    )
    .fetch_all(b.connection().pool())
    .await
    .unwrap();
    assert_eq!(
        events,
        vec![
            json!({"jobId": "a", "data": r#"{"pct": 42}"#}),
            json!({"jobId": "a", "data": "7"})
        ]
    );

    let err = refused(
        b.update_progress(&id("nope"), &json!(1)).await,
        ScriptErrorCode::JobNotFound,
    );
    assert_eq!(err.command, "updateProgress");
}

#[tokio::test]
async fn change_delay_reschedules_only_delayed_jobs() {
    let (_schema, b) = TestSchema::with_backend("mut_delay", "q").await;
    AddJob::new("d").delay(60_000).add(&b).await;
    AddJob::new("w").add(&b).await;

    let before = now_ms();
    b.change_delay(&id("d"), Duration::from_secs(5))
        .await
        .unwrap();
    let at = number(&b, "d", "process_at_ms").await;
    assert!((before + 5_000..=now_ms() + 5_000).contains(&at), "{at}");
    assert_eq!(
        column(&b, "d", "delay_ms").await.flatten().as_deref(),
        Some("5000")
    );

    let err = refused(
        b.change_delay(&id("w"), Duration::from_secs(1)).await,
        ScriptErrorCode::NotInState,
    );
    assert_eq!(err.command, "changeDelay");
    assert_eq!(err.state.as_deref(), Some("delayed"));

    let err = refused(
        b.change_delay(&id("nope"), Duration::ZERO).await,
        ScriptErrorCode::JobNotFound,
    );
    assert_eq!(err.job_id.as_deref(), Some("nope"));
}

#[tokio::test]
async fn change_priority_reorders_waiting_jobs() {
    let (_schema, b) = TestSchema::with_backend("mut_prio", "q").await;
    for j in ["a", "b", "c"] {
        AddJob::new(j).add(&b).await;
    }

    b.change_priority(&id("c"), 0, true).await.unwrap();
    let seq = number(&b, "c", "seq").await;
    assert!(seq < 0, "lifo moves it to the head: {seq}");
    assert_eq!(activate(&b, "t1").await.as_deref(), Some("c"));

    b.change_priority(&id("a"), 5, false).await.unwrap();
    assert_eq!(
        column(&b, "a", "priority").await.flatten().as_deref(),
        Some("5")
    );
    assert_eq!(
        activate(&b, "t2").await.as_deref(),
        Some("b"),
        "priority 0 goes first"
    );

    let err = refused(
        b.change_priority(&id("nope"), 1, false).await,
        ScriptErrorCode::JobNotFound,
    );
    assert_eq!(err.command, "changePriority");
}

#[tokio::test]
async fn remove_refuses_locked_and_scheduler_jobs() {
    let (_schema, b) = TestSchema::with_backend("mut_remove", "q").await;
    AddJob::new("active").add(&b).await;
    AddJob::new("plain").add(&b).await;
    AddJob::new("sched").scheduler("s").add(&b).await;
    assert_eq!(activate(&b, "t").await.as_deref(), Some("active"));
    b.add_log(&id("plain"), "line", None).await.unwrap();

    assert!(b.remove(&id("plain"), false).await.unwrap());
    assert_eq!(state(&b, "plain").await, None);
    assert!(logs(&b, "plain").await.is_empty(), "its logs go with it");

    assert!(
        !b.remove(&id("active"), false).await.unwrap(),
        "locked by a worker"
    );
    assert_eq!(state(&b, "active").await.as_deref(), Some("active"));

    let err = refused(
        b.remove(&id("sched"), true).await,
        ScriptErrorCode::BelongsToJobScheduler,
    );
    assert_eq!(err.command, "remove");
    assert_eq!(err.job_id.as_deref(), Some("sched"));
    assert_eq!(state(&b, "sched").await.as_deref(), Some("waiting"));

    assert!(
        !b.remove(&id("nope"), false).await.unwrap(),
        "Node.js on PG answers 0"
    );
}

#[tokio::test]
async fn remove_unprocessed_children_skips_active_ones() {
    let (_schema, b) = TestSchema::with_backend("mut_unprocessed", "q").await;
    add_flow(&b, "p", &["c1", "c2", "c3"]).await;
    assert_eq!(activate(&b, "t").await.as_deref(), Some("c1"));

    b.remove_unprocessed_children(&id("p")).await.unwrap();
    assert_eq!(state(&b, "c1").await.as_deref(), Some("active"));
    assert_eq!(state(&b, "c2").await, None);
    assert_eq!(state(&b, "c3").await, None);
    assert_eq!(
        column(&b, "p", "pending_deps").await.flatten().as_deref(),
        Some("1")
    );
    assert_eq!(state(&b, "p").await.as_deref(), Some("waiting-children"));
}

#[tokio::test]
async fn remove_child_dependency_detaches_once_and_names_the_parent_when_refused() {
    let (_schema, b) = TestSchema::with_backend("mut_child_dep", "q").await;
    add_flow(&b, "p", &["c1", "c2"]).await;

    assert!(b.remove_child_dependency(&id("c1"), "q:p").await.unwrap());
    assert_eq!(column(&b, "c1", "parent_id").await, Some(None), "detached");
    assert_eq!(
        column(&b, "p", "pending_deps").await.flatten().as_deref(),
        Some("1")
    );
    assert!(
        !b.remove_child_dependency(&id("c1"), "q:p").await.unwrap(),
        "no longer attached"
    );

    let err = refused(
        b.remove_child_dependency(&id("nope"), "q:p").await,
        ScriptErrorCode::JobNotFound,
    );
    assert_eq!(err.command, "removeChildDependency");
    assert_eq!(err.parent_key.as_deref(), Some("q:p"));

    // The parent goes alone: the child still points at it.
    assert!(b.remove(&id("p"), false).await.unwrap());
    let err = refused(
        b.remove_child_dependency(&id("c2"), "q:p").await,
        ScriptErrorCode::ParentNotFound,
    );
    assert_eq!(err.job_id.as_deref(), Some("c2"));
    assert_eq!(err.parent_key.as_deref(), Some("q:p"));
}
