//! Only what is Redis-specific; the shared cases are the conformance suite's `mutations.rs`.
//!
//! `JobMutations` on Redis: each change read back from the job hash, the state sets and the
//! events stream, as upstream's scripts leave them.

use crate::support::queue_ops as support;

use std::time::Duration;

use bullmq_core::backend::{AddJobs, JobMutations, ParentKeyOpts};
use bullmq_core::options::{Deduplication, ParentOptions};
use bullmq_core::{Error, Job, JobId, JobOptions, ScriptErrorCode};
use serde_json::json;
use support::{Ctx, T0};

/// The script error an operation failed with.
/// The script refusal `result` must be: its code, command and the state it names.
#[track_caller]
fn refusal<T: std::fmt::Debug>(
    result: bullmq_core::Result<T>,
) -> (ScriptErrorCode, &'static str, Option<String>) {
    match result.expect_err("a script refusal") {
        Error::Script(e) => (e.code, e.command, e.state),
        other => panic!("expected a script error, got {other}"),
    }
}

/// The id of a job that was never added.
fn nope() -> JobId {
    JobId::from("nope")
}

/// Asserts that `result` is the script `command`'s refusal of a job that does not exist.
fn assert_not_found<T: std::fmt::Debug>(result: bullmq_core::Result<T>, command: &str) {
    assert_eq!(
        refusal(result),
        (ScriptErrorCode::JobNotFound, command, None)
    );
}

/// A parent in `waiting-children` with two waiting children.
async fn family(ctx: &Ctx) -> (JobId, JobId, JobId) {
    let parent = Job::new("parent", "{}".to_owned(), JobOptions::new().job_id("p"), T0);
    let opts = ParentKeyOpts {
        add_to_waiting_children: true,
        ..ParentKeyOpts::default()
    };
    let parent = ctx.backend.add_job(&parent, &opts).await.unwrap();
    let child_opts = JobOptions::new().parent(ParentOptions::new("p", ctx.qualified_name()));
    let c1 = ctx.add("child", child_opts.clone()).await;
    let c2 = ctx.add("child", child_opts).await;
    (parent, c1, c2)
}

#[tokio::test]
async fn update_data_replaces_the_data_field() {
    let ctx = Ctx::new().await;
    let id = ctx.add_data("a", &json!({"v": 1}), JobOptions::new()).await;
    ctx.backend
        .update_data(&id, r#"{"v":2,"s":"é"}"#)
        .await
        .unwrap();
    assert_eq!(
        ctx.hget(id.as_str(), "data").as_deref(),
        Some(r#"{"v":2,"s":"é"}"#)
    );

    assert_not_found(ctx.backend.update_data(&nope(), "{}").await, "updateData");
}

#[tokio::test]
async fn update_progress_writes_json_text_and_emits_progress() {
    let ctx = Ctx::new().await;
    let id = ctx.add_plain("a").await;
    ctx.backend
        .update_progress(&id, &json!({"pct": 50, "step": "b"}))
        .await
        .unwrap();
    assert_eq!(
        ctx.hget(id.as_str(), "progress").as_deref(),
        Some(r#"{"pct":50,"step":"b"}"#)
    );
    ctx.backend.update_progress(&id, &json!(42)).await.unwrap();
    assert_eq!(ctx.hget(id.as_str(), "progress").as_deref(), Some("42"));

    let events = ctx.events_named("progress");
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["jobId"], id.as_str());
    assert_eq!(events[0]["data"], r#"{"pct":50,"step":"b"}"#);
    assert_eq!(events[1]["data"], "42");

    let refused = refusal(ctx.backend.update_progress(&nope(), &json!(1)).await);
    assert_eq!(refused.0, ScriptErrorCode::JobNotFound);
}

#[tokio::test]
async fn add_log_appends_and_honours_keep_logs() {
    let ctx = Ctx::new().await;
    let id = ctx.add_plain("a").await;
    let logs = format!("{id}:logs");

    assert_eq!(ctx.backend.add_log(&id, "one", None).await.unwrap(), 1);
    assert_eq!(ctx.backend.add_log(&id, "two", None).await.unwrap(), 2);
    assert_eq!(ctx.backend.add_log(&id, "three", Some(2)).await.unwrap(), 2);
    assert_eq!(ctx.list(&logs), vec!["two", "three"]);
    // 0 means "keep all", as in Node.js where it is falsy.
    assert_eq!(ctx.backend.add_log(&id, "four", Some(0)).await.unwrap(), 3);

    assert_not_found(ctx.backend.add_log(&nope(), "x", None).await, "addLog");
}

#[tokio::test]
async fn clear_logs_trims_or_deletes() {
    let ctx = Ctx::new().await;
    let id = ctx.add_plain("a").await;
    let logs = format!("{id}:logs");
    for row in ["a", "b", "c"] {
        ctx.backend.add_log(&id, row, None).await.unwrap();
    }
    ctx.backend.clear_logs(&id, Some(1)).await.unwrap();
    assert_eq!(ctx.list(&logs), vec!["c"]);
    ctx.backend.clear_logs(&id, None).await.unwrap();
    assert!(!ctx.exists(&logs));
}

#[tokio::test]
async fn change_delay_reschedules_from_now() {
    let ctx = Ctx::new().await;
    let id = ctx
        .add("a", JobOptions::new().delay(Duration::from_secs(10)))
        .await;
    ctx.clock.advance(Duration::from_secs(1));
    ctx.backend
        .change_delay(&id, Duration::from_secs(30))
        .await
        .unwrap();

    let due = T0 + 1_000 + 30_000;
    assert_eq!(ctx.hget(id.as_str(), "delay").as_deref(), Some("30000"));
    ctx.assert_only_delayed_until(&id, due);

    let waiting = ctx.add_plain("b").await;
    let refused = refusal(
        ctx.backend
            .change_delay(&waiting, Duration::from_secs(1))
            .await,
    );
    assert_eq!(
        refused,
        (
            ScriptErrorCode::NotInState,
            "changeDelay",
            Some("delayed".to_owned())
        )
    );
}

#[tokio::test]
async fn change_priority_moves_between_wait_and_prioritized() {
    let ctx = Ctx::new().await;
    let id = ctx.add_plain("a").await;

    ctx.backend.change_priority(&id, 5, false).await.unwrap();
    assert!(ctx.list("wait").is_empty());
    assert_eq!(ctx.zmembers("prioritized"), vec![id.to_string()]);
    assert_eq!(ctx.hget(id.as_str(), "priority").as_deref(), Some("5"));

    ctx.backend.change_priority(&id, 0, false).await.unwrap();
    assert!(ctx.zset("prioritized").is_empty());
    assert_eq!(ctx.list("wait"), vec![id.to_string()]);
    assert_eq!(ctx.hget(id.as_str(), "priority").as_deref(), Some("0"));

    let refused = ctx.backend.change_priority(&nope(), 1, false).await;
    assert_not_found(refused, "changePriority");
}

#[tokio::test]
async fn remove_takes_the_children_along() {
    let ctx = Ctx::new().await;
    let (parent, c1, c2) = family(&ctx).await;

    assert!(ctx.backend.remove(&parent, true).await.unwrap());
    for gone in [&parent, &c1, &c2] {
        assert!(!ctx.exists(gone.as_str()), "{gone} is removed");
    }
    assert!(ctx.list("wait").is_empty());
    assert!(ctx.zset("waiting-children").is_empty());
    assert!(!ctx.exists("p:dependencies"));
    let removed: Vec<String> = ctx
        .events_named("removed")
        .into_iter()
        .map(|e| e["jobId"].clone())
        .collect();
    for id in [&parent, &c1, &c2] {
        assert!(removed.contains(&id.to_string()), "removed event for {id}");
    }
}

#[tokio::test]
async fn remove_refuses_locked_jobs_and_scheduler_iterations() {
    let ctx = Ctx::new().await;
    let active = ctx.add_plain("a").await;
    ctx.activate_by_hand(&active, "token");
    assert!(!ctx.backend.remove(&active, false).await.unwrap());
    assert!(ctx.exists(active.as_str()));

    let iteration =
        bullmq_test_support::iterations::cron_iteration(&ctx.backend, T0 + 60_000).await;
    let refused = refusal(ctx.backend.remove(&iteration, false).await);
    assert_eq!(
        refused,
        (ScriptErrorCode::BelongsToJobScheduler, "removeJob", None)
    );
}

#[tokio::test]
async fn remove_unprocessed_children_keeps_the_parent() {
    let ctx = Ctx::new().await;
    let (parent, c1, c2) = family(&ctx).await;
    ctx.backend
        .remove_unprocessed_children(&parent)
        .await
        .unwrap();
    assert!(ctx.exists(parent.as_str()));
    assert!(!ctx.exists(c1.as_str()) && !ctx.exists(c2.as_str()));
    // With no dependency left, the parent is released to wait, as upstream does.
    assert_eq!(ctx.list("wait"), vec![parent.to_string()]);
    assert!(ctx.zset("waiting-children").is_empty());
}

#[tokio::test]
async fn remove_child_dependency_detaches_the_child() {
    let ctx = Ctx::new().await;
    let (parent, c1, c2) = family(&ctx).await;
    let parent_key = ctx.key(parent.as_str());

    assert!(
        ctx.backend
            .remove_child_dependency(&c1, &parent_key)
            .await
            .unwrap()
    );
    let hash = ctx.hgetall(c1.as_str());
    assert!(!hash.contains_key("parentKey") && !hash.contains_key("parent"));
    let deps: Vec<String> =
        ctx.cmd(redis::cmd("SMEMBERS").arg(format!("{parent_key}:dependencies")));
    assert_eq!(deps, vec![ctx.key(c2.as_str())]);
    // Already detached: nothing to do.
    assert!(
        !ctx.backend
            .remove_child_dependency(&c1, &parent_key)
            .await
            .unwrap()
    );

    let err = ctx
        .backend
        .remove_child_dependency(&c2, &ctx.key("missing"))
        .await
        .unwrap_err();
    let Error::Script(e) = err else {
        panic!("expected a script error")
    };
    assert_eq!(e.code, ScriptErrorCode::ParentNotFound);
    assert_eq!(e.command, "removeChildDependency");
    assert_eq!(e.parent_key, Some(ctx.key("missing")));
}

#[tokio::test]
async fn deduplication_keys_are_removed_only_for_their_holder_or_by_force() {
    let ctx = Ctx::new().await;
    let dedup = JobOptions::new().deduplication(Deduplication::new("d1"));
    let id = ctx.add("a", dedup.clone()).await;
    assert_eq!(
        ctx.cmd::<String>(redis::cmd("GET").arg(ctx.key("de:d1"))),
        id.as_str()
    );

    let other = JobId::from("other");
    assert!(
        !ctx.backend
            .remove_deduplication_key("d1", &other)
            .await
            .unwrap()
    );
    assert!(ctx.exists("de:d1"));
    assert!(
        ctx.backend
            .remove_deduplication_key("d1", &id)
            .await
            .unwrap()
    );
    assert!(!ctx.exists("de:d1"));

    ctx.add("b", dedup).await;
    assert!(ctx.backend.delete_deduplication_key("d1").await.unwrap());
    assert!(!ctx.backend.delete_deduplication_key("d1").await.unwrap());
}
