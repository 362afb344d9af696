//! Only what is Redis-specific; the shared cases are the conformance suite's `admin.rs`.
//!
//! `Admin` on Redis: each operation's effect read back from the keys, compared with what
//! upstream's script writes.

use crate::support::queue_ops as support;

use std::time::Duration;

use bullmq_core::backend::{Admin, Batch, ObliterateArgs, ObliterateRefusal};
use bullmq_core::job::FinishedState;
use bullmq_core::{JobId, JobOptions, JobState};
use support::{Ctx, T0};

fn ids(v: &[&JobId]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

#[tokio::test]
async fn pause_flags_meta_and_resume_restores_the_marker() {
    let ctx = Ctx::new().await;
    let a = ctx.add_plain("a").await;
    assert_eq!(ctx.zset("marker"), vec![("0".to_owned(), 0.0)]);

    ctx.backend.pause(true).await.unwrap();
    assert_eq!(ctx.hget("meta", "paused").as_deref(), Some("1"));
    assert!(!ctx.exists("marker"), "pausing deletes the marker");
    assert_eq!(
        ctx.list("wait"),
        ids(&[&a]),
        "6.x pause leaves jobs in wait"
    );
    assert_eq!(ctx.events().last().unwrap()["event"], "paused");

    ctx.backend.pause(false).await.unwrap();
    assert_eq!(ctx.hget("meta", "paused"), None);
    assert_eq!(ctx.zset("marker"), vec![("0".to_owned(), 0.0)]);
    assert_eq!(ctx.events().last().unwrap()["event"], "resumed");
}

#[tokio::test]
async fn resume_moves_legacy_paused_jobs_back_and_emits_once() {
    let ctx = Ctx::new().await;
    let a = ctx.add_plain("a").await;
    ctx.backend.pause(true).await.unwrap();
    // A job left in the pre-6.0 `paused` list by an old producer.
    ctx.cmd::<()>(redis::cmd("LPUSH").arg(ctx.key("paused")).arg("legacy"));

    ctx.backend.pause(false).await.unwrap();
    assert_eq!(ctx.list("wait"), vec![a.to_string(), "legacy".to_owned()]);
    assert!(!ctx.exists("paused"));
    assert_eq!(ctx.events_named("resumed").len(), 1);
}

#[tokio::test]
async fn drain_removes_waiting_and_delayed_jobs_but_not_scheduler_iterations() {
    let ctx = Ctx::new().await;
    let w1 = ctx.add_plain("w").await;
    let w2 = ctx.add_plain("w").await;
    let p = ctx.add("p", JobOptions::new().priority(3)).await;
    let d = ctx
        .add("d", JobOptions::new().delay(Duration::from_secs(10)))
        .await;
    let iteration =
        bullmq_test_support::iterations::cron_iteration(&ctx.backend, T0 + 60_000).await;

    ctx.backend.drain(false).await.unwrap();
    assert!(ctx.list("wait").is_empty());
    assert!(ctx.zset("prioritized").is_empty());
    for gone in [&w1, &w2, &p] {
        assert!(!ctx.exists(gone.as_str()), "job {gone} is removed");
    }
    assert_eq!(
        ctx.zmembers("delayed"),
        ids(&[&d, &iteration]),
        "delayed jobs stay unless asked"
    );

    ctx.backend.drain(true).await.unwrap();
    assert_eq!(ctx.zmembers("delayed"), ids(&[&iteration]));
    assert!(!ctx.exists(d.as_str()));
    assert!(ctx.exists(iteration.as_str()), "scheduler iterations stay");
}

#[tokio::test]
async fn clean_removes_finished_jobs_older_than_the_cut_off() {
    let ctx = Ctx::new().await;
    let old1 = ctx.add_plain("a").await;
    let old2 = ctx.add_plain("b").await;
    let new = ctx.add_plain("c").await;
    ctx.finish_by_hand(&old1, "completed", T0 - 10_000);
    ctx.finish_by_hand(&old2, "completed", T0 - 9_000);
    ctx.finish_by_hand(&new, "completed", T0);

    let mut cleaned = ctx
        .backend
        .clean_jobs_by_state(JobState::Completed, T0 - 5_000, 0)
        .await
        .unwrap();
    cleaned.sort();
    assert_eq!(cleaned, vec![old1.clone(), old2.clone()]);
    assert!(!ctx.exists(old1.as_str()) && !ctx.exists(old2.as_str()));
    assert_eq!(ctx.zmembers("completed"), ids(&[&new]));
    let event = ctx.events_named("cleaned").pop().unwrap();
    assert_eq!(event["count"], "2");
}

#[tokio::test]
async fn clean_waiting_uses_the_wait_list_and_honours_the_limit() {
    let ctx = Ctx::new().await;
    let first = ctx.add_plain("a").await;
    let second = ctx.add_plain("b").await;

    let cleaned = ctx
        .backend
        .clean_jobs_by_state(JobState::Waiting, T0 + 1, 1)
        .await
        .unwrap();
    // The list's tail holds the oldest job; a limited clean starts there.
    assert_eq!(cleaned, vec![first.clone()]);
    assert_eq!(ctx.list("wait"), ids(&[&second]));
    assert!(!ctx.exists(first.as_str()));
}

#[tokio::test]
async fn obliterate_refuses_unless_paused_and_forced_then_removes_everything() {
    let ctx = Ctx::new().await;
    ctx.add_plain("a").await;
    let active = ctx.add_plain("b").await;
    ctx.activate_by_hand(&active, "token");
    let args = ObliterateArgs {
        force: false,
        count: 1000,
    };

    let refused = ctx.backend.obliterate(args).await.unwrap();
    assert_eq!(refused, Err(ObliterateRefusal::NotPaused));
    ctx.backend.pause(true).await.unwrap();
    let refused = ctx.backend.obliterate(args).await.unwrap();
    assert_eq!(refused, Err(ObliterateRefusal::ActiveJobs));
    assert!(ctx.exists(active.as_str()), "a refusal removes nothing");

    let forced = ObliterateArgs {
        force: true,
        ..args
    };
    assert_eq!(
        ctx.backend.obliterate(forced).await.unwrap(),
        Ok(Batch::Done)
    );
    let left: Vec<String> = ctx.cmd(redis::cmd("KEYS").arg(format!("{}:*", ctx.prefix)));
    assert!(left.is_empty(), "keys left: {left:?}");
}

#[tokio::test]
async fn obliterate_works_in_batches() {
    let ctx = Ctx::new().await;
    for _ in 0..3 {
        ctx.add_plain("a").await;
    }
    ctx.backend.pause(true).await.unwrap();
    let args = ObliterateArgs {
        force: false,
        count: 2,
    };
    assert_eq!(ctx.backend.obliterate(args).await.unwrap(), Ok(Batch::More));
    assert_eq!(ctx.list("wait").len(), 1);
    assert_eq!(ctx.backend.obliterate(args).await.unwrap(), Ok(Batch::Done));
    assert!(!ctx.exists("meta"));
}

#[tokio::test]
async fn retry_finished_jobs_moves_failed_jobs_back_in_batches() {
    let ctx = Ctx::new().await;
    let a = ctx.add_plain("a").await;
    let b = ctx.add_plain("b").await;
    for id in [&a, &b] {
        ctx.finish_by_hand(id, "failed", T0 - 1_000);
        ctx.cmd::<()>(
            redis::cmd("HSET")
                .arg(ctx.key(id.as_str()))
                .arg("failedReason")
                .arg("boom"),
        );
    }

    let retry = |count| {
        ctx.backend
            .retry_finished_jobs(FinishedState::Failed, count, T0)
    };
    assert_eq!(retry(1).await.unwrap(), Batch::More);
    assert_eq!(retry(1).await.unwrap(), Batch::More);
    assert_eq!(retry(1).await.unwrap(), Batch::Done);
    let mut waiting = ctx.list("wait");
    waiting.sort();
    assert_eq!(waiting, ids(&[&a, &b]));
    assert!(ctx.zset("failed").is_empty());
    let hash = ctx.hgetall(a.as_str());
    for field in ["failedReason", "finishedOn", "processedOn"] {
        assert!(!hash.contains_key(field), "{field} is cleared");
    }
    let events = ctx.events_named("waiting");
    let prev = |e: &std::collections::HashMap<String, String>| e.get("prev").cloned();
    assert!(
        events
            .iter()
            .any(|e| e["jobId"] == a.as_str() && prev(e).as_deref() == Some("failed"))
    );
}

#[tokio::test]
async fn retry_finished_jobs_skips_jobs_finished_after_the_cut_off() {
    let ctx = Ctx::new().await;
    let a = ctx.add_plain("a").await;
    ctx.finish_by_hand(&a, "completed", T0 + 5_000);
    let batch = ctx
        .backend
        .retry_finished_jobs(FinishedState::Completed, 10, T0)
        .await
        .unwrap();
    assert_eq!(batch, Batch::Done);
    assert_eq!(ctx.zmembers("completed"), ids(&[&a]));
}

#[tokio::test]
async fn promote_jobs_makes_every_delayed_job_ready() {
    let ctx = Ctx::new().await;
    let far = JobOptions::new().delay(Duration::from_secs(3_600));
    let a = ctx.add("a", far.clone()).await;
    let b = ctx.add("b", far).await;

    assert_eq!(ctx.backend.promote_jobs(1000).await.unwrap(), Batch::Done);
    assert!(ctx.zset("delayed").is_empty());
    let mut waiting = ctx.list("wait");
    waiting.sort();
    assert_eq!(waiting, ids(&[&a, &b]));
    let events = ctx.events_named("waiting");
    assert!(
        events
            .iter()
            .all(|e| e.get("prev").map(String::as_str) == Some("delayed"))
    );
    assert_eq!(events.len(), 2);
}

#[tokio::test]
async fn remove_orphaned_jobs_deletes_only_unreferenced_job_keys() {
    let ctx = Ctx::new().await;
    let kept = ctx.add_plain("a").await;
    let hash_named = |key: &str, name: &str| {
        ctx.cmd::<()>(redis::cmd("HSET").arg(ctx.key(key)).arg("name").arg(name));
    };
    hash_named("orphan1", "x");
    ctx.cmd::<()>(redis::cmd("RPUSH").arg(ctx.key("orphan1:logs")).arg("line"));
    hash_named("orphan2", "y");
    // Not jobs: the queue's own keys and what lives under them.
    hash_named("repeat:s1", "z");
    ctx.cmd::<()>(redis::cmd("SET").arg(ctx.key("de:d1")).arg("1"));

    let removed = ctx.backend.remove_orphaned_jobs(1000, 0).await.unwrap();
    assert_eq!(removed, 2);
    for gone in ["orphan1", "orphan1:logs", "orphan2"] {
        assert!(!ctx.exists(gone), "{gone} is removed");
    }
    for kept in [kept.as_str(), "repeat:s1", "de:d1"] {
        assert!(ctx.exists(kept), "{kept} stays");
    }
}

#[tokio::test]
async fn set_rate_limit_fills_the_limiter_until_it_expires() {
    let ctx = Ctx::new().await;
    ctx.backend
        .set_rate_limit(Duration::from_secs(5))
        .await
        .unwrap();
    let value: String = ctx.cmd(redis::cmd("GET").arg(ctx.key("limiter")));
    assert_eq!(value, "9007199254740991");
    let ttl: i64 = ctx.cmd(redis::cmd("PTTL").arg(ctx.key("limiter")));
    assert!((1..=5_000).contains(&ttl), "ttl {ttl}");

    assert!(ctx.backend.remove_rate_limit_key().await.unwrap());
    assert!(!ctx.backend.remove_rate_limit_key().await.unwrap());
}

#[tokio::test]
async fn remove_deprecated_priority_key_deletes_the_old_helper() {
    let ctx = Ctx::new().await;
    ctx.cmd::<()>(redis::cmd("SET").arg(ctx.key("priority")).arg("1"));
    assert_eq!(
        ctx.backend.remove_deprecated_priority_key().await.unwrap(),
        1
    );
    assert_eq!(
        ctx.backend.remove_deprecated_priority_key().await.unwrap(),
        0
    );
}
