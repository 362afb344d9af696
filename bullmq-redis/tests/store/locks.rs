//! Only what is Redis-specific; the shared cases are the conformance suite's `locks.rs`.
//!
//! `Locks` on Redis: `extendLock` and `extendLocks` read back from the lock keys and the
//! stalled set.

use crate::support::transitions as support;

use std::time::Duration;

use bullmq_core::backend::{LockToken, Locks};
use bullmq_core::{Job, JobId, JobOptions};
use support::{Ctx, LOCK};

const LONGER: Duration = Duration::from_secs(120);

/// Marks `id` as a stalled candidate, as the previous sweep would have.
fn mark_stalled(ctx: &Ctx, id: &JobId) {
    ctx.cmd::<()>(redis::cmd("SADD").arg(ctx.key("stalled")).arg(id.as_str()));
}

/// A job `a` taken with token `tok`, then marked stalled.
async fn taken_and_marked_stalled() -> (Ctx, Job) {
    let (ctx, job) = Ctx::with_active("a", JobOptions::new()).await;
    mark_stalled(&ctx, &job.id);
    (ctx, job)
}

/// Extends `job`'s lock by [`LONGER`] with `token`; whether it was.
async fn extend(ctx: &Ctx, job: &Job, token: &str) -> bool {
    ctx.backend
        .extend_lock(&job.id, &LockToken::new(token), LONGER)
        .await
        .unwrap()
}

fn lock(id: &JobId) -> String {
    format!("{id}:lock")
}

#[tokio::test]
async fn extend_lock_renews_a_held_lock_and_clears_the_stalled_mark() {
    let (ctx, job) = taken_and_marked_stalled().await;
    assert!(extend(&ctx, &job, "tok").await);
    let ttl = ctx.pttl(&lock(&job.id));
    assert!(
        ttl > 30_000 && ttl <= 120_000,
        "PTTL {ttl} should reflect the new duration"
    );
    assert!(ctx.set("stalled").is_empty());
}

#[tokio::test]
async fn extend_lock_with_another_token_or_no_lock_fails() {
    let (ctx, job) = taken_and_marked_stalled().await;
    assert!(!extend(&ctx, &job, "thief").await);
    assert_eq!(ctx.get(&lock(&job.id)).as_deref(), Some("tok"));
    assert!(ctx.pttl(&lock(&job.id)) <= 30_000, "left as it was");
    assert_eq!(ctx.set("stalled"), vec![job.id.to_string()]);

    ctx.drop_lock(job.id.as_str());
    assert!(!extend(&ctx, &job, "tok").await);
    assert!(!ctx.exists(&lock(&job.id)), "a lost lock is not recreated");
}

#[tokio::test]
async fn extend_locks_renews_held_locks_and_returns_the_lost_ones() {
    let ctx = Ctx::new().await;
    let held = ctx.add("held", JobOptions::new()).await;
    let stolen = ctx.add("stolen", JobOptions::new()).await;
    let expired = ctx.add("expired", JobOptions::new()).await;
    for _ in 0..3 {
        ctx.take("tok").await;
    }
    for job in [&held, &stolen, &expired] {
        mark_stalled(&ctx, &job.id);
    }
    ctx.cmd::<()>(
        redis::cmd("SET")
            .arg(ctx.key(&lock(&stolen.id)))
            .arg("other-worker")
            .arg("PX")
            .arg(LOCK.as_millis().to_string()),
    );
    ctx.cmd::<()>(redis::cmd("DEL").arg(ctx.key(&lock(&expired.id))));

    let token = LockToken::new("tok");
    let lost = ctx
        .backend
        .extend_locks(
            &[
                (held.id.clone(), token.clone()),
                (stolen.id.clone(), token.clone()),
                (expired.id.clone(), token),
            ],
            LONGER,
        )
        .await
        .unwrap();
    assert_eq!(lost, vec![stolen.id.clone(), expired.id.clone()]);

    let ttl = ctx.pttl(&lock(&held.id));
    assert!(ttl > 30_000 && ttl <= 120_000, "PTTL {ttl}");
    assert_eq!(
        ctx.get(&lock(&stolen.id)).as_deref(),
        Some("other-worker"),
        "another worker's lock is left alone"
    );
    assert!(!ctx.exists(&lock(&expired.id)));
    let mut still_marked = vec![stolen.id.to_string(), expired.id.to_string()];
    still_marked.sort();
    assert_eq!(ctx.set("stalled"), still_marked);
}
