//! `JobMutations`: changing a job's data, progress, logs, delay and priority, removing jobs
//! and their children, and deduplication keys.

use std::time::Duration;

use bullmq_core::backend::{JobMutations, Lifecycle, Queries, Range, Transitions};
use bullmq_core::{JobOptions, JobState, ScriptErrorCode};
use serde_json::json;

use super::{Sec, T0, fetch, id, nope_not_found, refused, script};
use crate::ctx::dedup_on;
use crate::store::Store;

async fn logs<S: Store>(s: &Sec<S>, job: &str) -> Vec<String> {
    s.b.get_job_logs(&id(job), Range::ALL_OLDEST_FIRST)
        .await
        .unwrap()
        .logs
}

/// Parent `p` of this queue waiting for `children`, also of this queue.
async fn family<S: Store>(s: &Sec<S>, p: &str, children: &[&str]) {
    let children: Vec<(&str, JobOptions)> =
        children.iter().map(|c| (*c, JobOptions::new())).collect();
    s.family(p, "q", &children).await;
}

pub async fn update_data_replaces_the_payload<S: Store>() {
    let s = Sec::<S>::new().await;
    let a = s.add_id("a", JobOptions::new()).await;
    s.b.update_data(&a, r#"{"v":2,"s":"é"}"#).await.unwrap();
    let data: serde_json::Value = serde_json::from_str(&s.job(&a).await.data).unwrap();
    assert_eq!(data, json!({"v": 2, "s": "é"}));

    nope_not_found(s.b.update_data(&id("nope"), "{}").await, "updateData");
}

pub async fn update_progress_stores_it_and_emits_progress<S: Store>() {
    let s = Sec::<S>::new().await;
    let a = s.add_id("a", JobOptions::new()).await;
    s.b.update_progress(&a, &json!({"pct": 50, "step": "b"}))
        .await
        .unwrap();
    assert_eq!(s.job(&a).await.progress, json!({"pct": 50, "step": "b"}));
    s.b.update_progress(&a, &json!(42)).await.unwrap();
    assert_eq!(s.job(&a).await.progress, json!(42));

    let events = s.events_named("progress").await;
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["jobId"], "a");
    let first: serde_json::Value = serde_json::from_str(&events[0]["data"]).unwrap();
    assert_eq!(first, json!({"pct": 50, "step": "b"}));
    assert_eq!(events[1]["data"], "42");

    nope_not_found(
        s.b.update_progress(&id("nope"), &json!(1)).await,
        "updateProgress",
    );
}

pub async fn add_log_counts_lines_and_honours_keep_logs<S: Store>() {
    let s = Sec::<S>::new().await;
    let a = s.add_id("a", JobOptions::new()).await;
    assert_eq!(s.b.add_log(&a, "one", None).await.unwrap(), 1);
    // 0 keeps all, as in Node.js, where it is falsy.
    assert_eq!(s.b.add_log(&a, "two", Some(0)).await.unwrap(), 2);
    assert_eq!(s.b.add_log(&a, "three", Some(5)).await.unwrap(), 3);
    assert_eq!(s.b.add_log(&a, "four", Some(2)).await.unwrap(), 2);
    assert_eq!(logs(&s, "a").await, ["three", "four"]);

    nope_not_found(s.b.add_log(&id("nope"), "x", None).await, "addLog");
}

pub async fn clear_logs_keeps_the_newest_or_removes_all<S: Store>() {
    let s = Sec::<S>::new().await;
    let a = s.add_id("a", JobOptions::new()).await;
    for line in ["1", "2", "3"] {
        s.b.add_log(&a, line, None).await.unwrap();
    }
    s.b.clear_logs(&a, Some(2)).await.unwrap();
    assert_eq!(logs(&s, "a").await, ["2", "3"]);
    s.b.clear_logs(&a, None).await.unwrap();
    assert!(logs(&s, "a").await.is_empty());
    s.b.clear_logs(&id("nope"), Some(1)).await.unwrap();
}

pub async fn change_delay_reschedules_from_now_only_delayed_jobs<S: Store>() {
    let s = Sec::<S>::new().await;
    let d = s
        .add_id("d", JobOptions::new().delay(Duration::from_secs(10)))
        .await;
    s.clock.advance(Duration::from_secs(1));
    s.b.change_delay(&d, Duration::from_secs(30)).await.unwrap();

    let due = T0 + 1_000 + 30_000;
    assert_eq!(s.job(&d).await.delay, Duration::from_secs(30));
    assert_eq!(s.state(&d).await, Some(JobState::Delayed));
    let next = s.b.move_to_active(&fetch("t")).await.unwrap();
    assert_eq!(next.next_delayed_at, Some(due));

    let w = s.add_id("w", JobOptions::new()).await;
    let err = refused(
        s.b.change_delay(&w, Duration::from_secs(1)).await,
        ScriptErrorCode::NotInState,
        "changeDelay",
    );
    assert_eq!(err.state.as_deref(), Some("delayed"));
    let err = script(
        s.b.change_delay(&id("nope"), Duration::ZERO)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, ScriptErrorCode::JobNotFound);
    assert_eq!(err.job_id.as_deref(), Some("nope"));
}

pub async fn change_priority_reorders_waiting_jobs<S: Store>() {
    let s = Sec::<S>::new().await;
    for j in ["a", "b", "c"] {
        s.add_id(j, JobOptions::new()).await;
    }
    // LIFO moves it to the head.
    s.b.change_priority(&id("c"), 0, true).await.unwrap();
    assert_eq!(s.take("t1").await.id.as_str(), "c");

    s.b.change_priority(&id("a"), 5, false).await.unwrap();
    assert_eq!(s.job(&id("a")).await.priority, 5);
    assert_eq!(s.state(&id("a")).await, Some(JobState::Prioritized));
    assert_eq!(s.take("t2").await.id.as_str(), "b", "priority 0 goes first");
    s.b.change_priority(&id("a"), 0, false).await.unwrap();
    assert_eq!(s.job(&id("a")).await.priority, 0);
    assert_eq!(s.state(&id("a")).await, Some(JobState::Waiting));

    nope_not_found(
        s.b.change_priority(&id("nope"), 1, false).await,
        "changePriority",
    );
}

pub async fn remove_refuses_locked_and_scheduler_jobs<S: Store>() {
    let s = Sec::<S>::new().await;
    // PostgreSQL's `remove` reads the lock against the server's clock.
    s.clock.set(crate::support::now_ms());
    let active = s.add_id("locked", JobOptions::new()).await;
    let plain = s.add_id("plain", JobOptions::new()).await;
    assert_eq!(s.take("t").await.id, active);
    s.b.add_log(&plain, "line", None).await.unwrap();

    assert!(s.b.remove(&plain, false).await.unwrap());
    assert_eq!(s.state(&plain).await, None);
    assert!(logs(&s, "plain").await.is_empty(), "its logs go with it");

    assert!(
        !s.b.remove(&active, false).await.unwrap(),
        "locked by a worker"
    );
    assert_eq!(s.state(&active).await, Some(JobState::Active));

    let iteration = bullmq_test_support::iterations::cron_iteration(&s.b, T0 + 60_000).await;
    // (The refusing command's name is the store's: `removeJob` on Redis, `remove` on
    // PostgreSQL.)
    let err = script(s.b.remove(&iteration, true).await.unwrap_err());
    assert_eq!(err.code, ScriptErrorCode::BelongsToJobScheduler);
    assert_eq!(err.job_id.as_deref(), Some(iteration.as_str()));
    assert!(s.state(&iteration).await.is_some(), "the iteration stays");
}

pub async fn remove_with_children_takes_the_subtree_unless_a_child_is_locked<S: Store>() {
    let s = Sec::<S>::new().await;
    // PostgreSQL's `remove` reads the lock against the server's clock.
    s.clock.set(crate::support::now_ms());
    family(&s, "p1", &["c1", "c2"]).await;
    assert_eq!(s.state(&id("p1")).await, Some(JobState::WaitingChildren));

    assert!(s.b.remove(&id("p1"), true).await.unwrap());
    for j in ["p1", "c1", "c2"] {
        assert_eq!(s.state(&id(j)).await, None, "{j} removed");
        assert!(s.b.get_job(&id(j)).await.unwrap().is_none());
    }

    family(&s, "p2", &["c3"]).await;
    assert_eq!(s.take("t").await.id.as_str(), "c3");
    assert!(
        !s.b.remove(&id("p2"), true).await.unwrap(),
        "a locked child blocks it"
    );
    assert_eq!(s.state(&id("p2")).await, Some(JobState::WaitingChildren));
    assert_eq!(s.state(&id("c3")).await, Some(JobState::Active));
}

pub async fn removing_the_last_child_releases_its_parent<S: Store>() {
    let s = Sec::<S>::new().await;
    family(&s, "p", &["c"]).await;
    assert!(s.b.remove(&id("c"), false).await.unwrap());
    assert_eq!(
        s.state(&id("p")).await,
        Some(JobState::Waiting),
        "its last dependency went"
    );
}

pub async fn remove_unprocessed_children_skips_active_ones<S: Store>() {
    let s = Sec::<S>::new().await;
    // PostgreSQL reads the lock against the server's clock.
    s.clock.set(crate::support::now_ms());
    family(&s, "p", &["c1", "c2", "c3"]).await;
    assert_eq!(s.take("t").await.id.as_str(), "c1");

    s.b.remove_unprocessed_children(&id("p")).await.unwrap();
    assert_eq!(s.state(&id("c1")).await, Some(JobState::Active));
    assert_eq!(s.state(&id("c2")).await, None);
    assert_eq!(s.state(&id("c3")).await, None);
    assert_eq!(s.state(&id("p")).await, Some(JobState::WaitingChildren));
    // (What the parent's dependency counts say afterwards differs: Redis counts the active
    // child only, PostgreSQL's pending count is pinned beside the store.)
}

pub async fn remove_child_dependency_detaches_once_and_names_the_parent<S: Store>() {
    let s = Sec::<S>::new().await;
    family(&s, "p", &["c1", "c2"]).await;
    let parent_key = s.b.to_key("p");

    assert!(
        s.b.remove_child_dependency(&id("c1"), &parent_key)
            .await
            .unwrap()
    );
    let detached = s.job(&id("c1")).await;
    assert_eq!(detached.parent_key, None);
    assert_eq!(detached.parent, None);
    let deps =
        s.b.get_dependencies(
            &id("p"),
            &bullmq_core::backend::DependenciesQuery::default(),
        )
        .await
        .unwrap();
    assert_eq!(deps.unprocessed, Some((vec![s.b.to_key("c2")], 0)));
    assert!(
        !s.b.remove_child_dependency(&id("c1"), &parent_key)
            .await
            .unwrap(),
        "no longer attached"
    );

    nope_not_found(
        s.b.remove_child_dependency(&id("nope"), &parent_key).await,
        "removeChildDependency",
    );

    // The parent goes alone: the child still points at it.
    assert!(s.b.remove(&id("p"), false).await.unwrap());
    let err = refused(
        s.b.remove_child_dependency(&id("c2"), &parent_key).await,
        ScriptErrorCode::ParentNotFound,
        "removeChildDependency",
    );
    assert_eq!(err.parent_key.as_deref(), Some(parent_key.as_str()));
}

pub async fn deduplication_keys_are_removed_for_their_holder_or_by_force<S: Store>() {
    let s = Sec::<S>::new().await;
    let a = s.add_id("a", dedup_on("d1")).await;
    let b = s.add_id("b", dedup_on("d2")).await;
    assert_eq!(
        s.b.get_deduplication_job_id("d1").await.unwrap(),
        Some(a.clone())
    );

    assert!(
        !s.b.remove_deduplication_key("d1", &b).await.unwrap(),
        "not its holder"
    );
    assert_eq!(
        s.b.get_deduplication_job_id("d1").await.unwrap(),
        Some(a.clone())
    );
    assert!(s.b.remove_deduplication_key("d1", &a).await.unwrap());
    assert_eq!(s.b.get_deduplication_job_id("d1").await.unwrap(), None);
    assert!(!s.b.remove_deduplication_key("d1", &a).await.unwrap());

    assert!(s.b.delete_deduplication_key("d2").await.unwrap());
    assert_eq!(s.b.get_deduplication_job_id("d2").await.unwrap(), None);
    assert!(!s.b.delete_deduplication_key("d2").await.unwrap());
    assert_eq!(s.state(&b).await, Some(JobState::Waiting), "the job stays");
}
