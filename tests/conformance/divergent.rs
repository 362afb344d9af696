//! Behaviour of Node.js BullMQ on Redis that upstream's own PostgreSQL backend does not share:
//! these cases run on Redis only (see `main.rs`), each saying what upstream's SQL does instead,
//! so that a change on either side shows.

use crate::support::held::fetch_params;
use std::time::Duration;

use bullmq::backend::{LockToken, Range};
use bullmq::{JobOptions, JobState, ScriptErrorCode};
use serde_json::json;

use crate::ctx::{Ctx, dedup_on};
use crate::events::{add_later, collect_until_the_end, reader};
use crate::store::Store;
use crate::support::script_code as code;

/// On Redis the lock is a key that expires; upstream's PostgreSQL compares the token only
/// (`move_to_completed`, `extend_lock` ignore `locked_until_ms`), so a late finish succeeds
/// there until the stalled check takes the job back.
pub async fn an_expired_lock_is_refused<S: Store>() {
    let ctx = Ctx::<S>::new("lock-expiry").await;
    let id = ctx.add_with("a", JobOptions::new()).await;
    ctx.take_for("t", Duration::from_secs(5)).await;
    let a = ctx.queue.job(id.clone());
    let token = LockToken::new("t");
    assert!(a.extend_lock(&token, Duration::from_secs(2)).await.unwrap());
    // Simulates work while the 2 s lock is held.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        a.extend_lock(&token, Duration::from_millis(100))
            .await
            .unwrap(),
        "still held"
    );
    // Waits for the 100 ms lock to expire on the server.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !a.extend_lock(&token, Duration::from_millis(100))
            .await
            .unwrap()
    );
    let err = a.move_to_completed(&1, &token, false).await.unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::LockNotFound);
    assert!(ctx.job(&id).await.return_value.is_none());
}

/// The lock is a key that expires by the server's clock, so a stalled check on a host whose
/// clock runs 31 s ahead of the holder's takes nothing from a 30 s lock. Upstream's
/// PostgreSQL compares `locked_until_ms` (the holder's clock plus the lock) with the
/// checker's clock and takes the job back (`tests/postgres/clock_skew.rs`): there, the skew
/// between workers must stay under the lock duration less the renewal interval (R18).
pub async fn a_checker_ahead_by_more_than_the_lock_takes_nothing<S: Store>() {
    crate::clock_skew::checks_ahead_take_nothing::<S>("skew-past-lock", 31_000).await;
}

/// Upstream's PostgreSQL `move_active_to_wait` leaves the job where it is and answers as if it
/// had moved it; Redis refuses with the lock's code.
pub async fn move_to_wait_with_another_token_is_refused<S: Store>() {
    let ctx = Ctx::<S>::new("wait-token").await;
    let id = ctx.add_with("a", JobOptions::new()).await;
    ctx.take("right").await;
    let err = ctx
        .queue
        .job(id.clone())
        .move_to_wait(&LockToken::new("wrong"))
        .await
        .unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::LockMismatch);
    assert_eq!(ctx.state(&id).await, Some(JobState::Active));
}

/// Node.js on PostgreSQL returns the new line's ordinal plus one (which keeps growing after a
/// trim) where Redis returns the length of the list.
pub async fn log_by_id_returns_the_number_of_lines<S: Store>() {
    let ctx = Ctx::<S>::new("log-count").await;
    let job = ctx
        .queue
        .add("a", &json!({}), JobOptions::new().keep_logs(1))
        .await
        .unwrap();
    let handle = ctx.queue.job_of(&job);
    handle.log("one").await.unwrap();
    handle.log("two").await.unwrap();
    assert_eq!(ctx.queue.job(job.id.clone()).log("three").await.unwrap(), 2);
    let logs = ctx.queue.get_job_logs(&job.id, Range::ALL).await.unwrap();
    assert_eq!(logs.count, 2);
}

/// Upstream's PostgreSQL `remove` publishes no `removed` event.
pub async fn removing_a_job_publishes_removed<S: Store>() {
    let ctx = Ctx::<S>::new("removed-event").await;
    let events = reader(&ctx).await;
    let mut sub = events.subscribe();
    let later = add_later(&ctx).await;
    assert!(ctx.queue.remove(&later, false).await.unwrap());
    let seen = collect_until_the_end(&ctx, &mut sub).await;
    assert!(
        seen.iter().any(|e| e.event
            == bullmq::QueueEvent::Removed {
                job_id: later.clone(),
                prev: Some("delayed".into())
            }),
        "{seen:#?}"
    );
    events.close().await;
}

/// Upstream's PostgreSQL `move_to_waiting_children` checks the lock first; Redis only when
/// there are pending children, so a job without any answers false whatever the token.
pub async fn waiting_for_no_children_skips_the_lock_check<S: Store>() {
    let ctx = Ctx::<S>::new("no-children").await;
    let id = ctx.add_with("a", JobOptions::new()).await;
    ctx.take("right").await;
    let a = ctx.queue.job(id.clone());
    assert!(
        !a.move_to_waiting_children(&LockToken::new("wrong"), None)
            .await
            .unwrap()
    );
    assert_eq!(ctx.state(&id).await, Some(JobState::Active));
}

/// Upstream's PostgreSQL `remove_unprocessed_children` deletes the children but keeps their
/// (pending) dependency rows and does not release a parent left with no pending child; Redis
/// forgets them and moves the parent to wait.
pub async fn removing_the_unprocessed_children_releases_the_parent<S: Store>() {
    let ctx = Ctx::<S>::new("prune-release").await;
    let added = bullmq::flow::FlowProducer::new(ctx.backend().await)
        .add(
            bullmq::flow::FlowJob::new(ctx.name.clone(), "parent", json!({}))
                .child(bullmq::flow::FlowJob::new(ctx.name.clone(), "c", json!({}))),
        )
        .await
        .unwrap();
    let p = ctx.queue.job(added.job.id.clone());
    assert!(p.is_waiting_children().await.unwrap());
    p.remove_unprocessed_children().await.unwrap();
    let counts = p
        .get_dependencies_count(&[bullmq::backend::DependencyKind::Unprocessed])
        .await
        .unwrap();
    assert_eq!(counts, [(bullmq::backend::DependencyKind::Unprocessed, 0)]);
    assert!(p.is_waiting().await.unwrap());
}

/// Removed children are not counted: of three children, one running, `remove_unprocessed_children`
/// removes the two waiting ones and Redis counts 1 unprocessed (the running one) and lists
/// it alone. Upstream's PostgreSQL `remove_unprocessed_children` deletes the two jobs but
/// keeps their pending `job_dependency` rows, so its `get_dependency_counts` says 3 (as Node.js
/// 6.7.6's `getDependenciesCount` does on its own PostgreSQL backend, checked with a Node.js
/// script), and the unprocessed list still names the removed two. Nothing of ours is
/// involved: we run both commands as Node.js does.
pub async fn removed_children_are_not_counted_as_unprocessed<S: Store>() {
    use bullmq::backend::DependencyKind;
    use bullmq::flow::{FlowJob, FlowProducer};
    let ctx = Ctx::<S>::new("prune-count").await;
    let kids = ctx.other("prune-kids").await;
    let child =
        |n: &str| FlowJob::new(kids.name().clone(), n, json!({})).opts(JobOptions::new().job_id(n));
    let added = FlowProducer::new(ctx.backend().await)
        .add(
            FlowJob::new(ctx.name.clone(), "parent", json!({}))
                .child(child("c1"))
                .child(child("c2"))
                .child(child("c3")),
        )
        .await
        .unwrap();
    let fetch = fetch_params("t", Duration::from_secs(30), None);
    let running = {
        use bullmq::backend::Transitions as _;
        kids.backend()
            .move_to_active(&fetch)
            .await
            .unwrap()
            .job
            .unwrap()
            .id
    };
    let p = ctx.queue.job(added.job.id.clone());
    p.remove_unprocessed_children().await.unwrap();
    let counts = p
        .get_dependencies_count(&[DependencyKind::Unprocessed])
        .await
        .unwrap();
    assert_eq!(counts, [(DependencyKind::Unprocessed, 1)]);
    let page = ctx
        .queue
        .get_dependencies(&added.job.id, DependencyKind::Unprocessed, 0, None)
        .await
        .unwrap();
    let listed: Vec<&str> = page.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(listed, [running.as_str()]);
    assert_eq!(page.items.len(), 1, "{:?}", page.items);
}

/// Upstream's PostgreSQL keeps `data` (and `returnvalue`) as `jsonb`, which reorders keys
/// (shorter first), keeps the last of duplicate keys and drops the text's formatting; Redis
/// keeps the JSON text as written. Values are equal either way (see
/// `queue::a_large_payload_round_trips`).
pub async fn data_is_kept_as_written<S: Store>() {
    let ctx = Ctx::<S>::new("as-written").await;
    let text = r#"{"zebra":1,"a":{"y":2,"x":3}}"#;
    let raw: Box<serde_json::value::RawValue> = serde_json::from_str(text).unwrap();
    let job = ctx.queue.add("raw", &raw, JobOptions::new()).await.unwrap();
    assert_eq!(ctx.job(&job.id).await.data, text);
}

/// Removing the last child of a parent in its own queue (here by `drain`) removes the parent,
/// and with it the parent's deduplication key, which still names the parent. (Upstream 6.7.0
/// left that key behind, so an add with the parent's deduplication id was deduplicated to a job
/// that no longer existed until the key expired; fixed in 6.7.6.) Upstream's PostgreSQL
/// removes the parent too but keeps its `deduplication` row, as 6.7.0 did on Redis.
pub async fn a_parent_removed_with_its_last_child_frees_its_own_deduplication_id<S: Store>() {
    use bullmq_core::JobId;
    use bullmq_core::backend::{Admin, Lifecycle, Queries, Transitions};
    use bullmq_core::options::ParentOptions;
    let s = crate::backend::Sec::<S>::new().await;
    // A deduplicated job becomes a parent as a processor makes it one: it adds a child of the
    // same queue, then waits for it.
    let parent = s.add_id("p", dedup_on("dp")).await;
    assert_eq!(s.take("tp").await.id, parent);
    let child = s
        .add_id(
            "c",
            JobOptions::new().parent(ParentOptions::new("p", s.b.qualified_name())),
        )
        .await;
    let child_key = s.b.to_key(child.as_str());
    assert!(
        s.b.move_to_waiting_children(&parent, &LockToken::new("tp"), Some(&child_key))
            .await
            .unwrap()
    );
    assert_eq!(
        s.b.get_deduplication_job_id("dp").await.unwrap(),
        Some(parent.clone())
    );

    s.b.drain(false).await.unwrap();
    assert_eq!(s.state(&child).await, None);
    assert_eq!(s.state(&parent).await, None, "its last child went");
    assert_eq!(
        s.b.get_deduplication_job_id("dp").await.unwrap(),
        None,
        "the removed parent's id is free again"
    );
    let again = s.add_id("p2", dedup_on("dp")).await;
    assert_eq!(
        again,
        JobId::from("p2"),
        "added, not dedup_on to the removed parent"
    );
}
