//! `Admin`: pausing, draining, cleaning, obliterating, retrying and promoting in bulk, and the
//! queue's rate limit.

use std::time::Duration;

use bullmq_core::backend::{
    Admin, Batch, FetchParams, ObliterateArgs, ObliterateRefusal, QueueMeta, RateLimiter,
    Transitions,
};
use bullmq_core::job::FinishedState;
use bullmq_core::{JobId, JobOptions, JobState};

use super::{Sec, T0, fetch, id};
use crate::store::Store;

/// A cron scheduler `s1` whose first iteration is due a minute after [`T0`]; the iteration.
async fn scheduler_iteration<S: Store>(s: &Sec<S>) -> JobId {
    bullmq_test_support::iterations::cron_iteration(&s.b, T0 + 60_000).await
}

/// Calls `step` until it answers [`Batch::Done`] (at most `max` times); how many it took.
async fn until_done<F, Fut>(max: usize, mut step: F) -> usize
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Batch>,
{
    for n in 1..=max {
        if step().await == Batch::Done {
            return n;
        }
    }
    panic!("not done after {max} batches");
}

pub async fn pause_holds_claims_and_resume_releases_them<S: Store>() {
    let s = Sec::<S>::new().await;
    let a = s.add_id("a", JobOptions::new()).await;

    s.b.pause(true).await.unwrap();
    assert_eq!(
        s.b.get_queue_meta_field("paused").await.unwrap().as_deref(),
        Some("1")
    );
    let next = s.b.move_to_active(&fetch("t")).await.unwrap();
    assert!(next.job.is_none(), "a paused queue hands out nothing");
    assert_eq!(s.state(&a).await, Some(JobState::Waiting));
    assert_eq!(s.events_named("paused").await.len(), 1);

    s.b.pause(false).await.unwrap();
    assert_eq!(s.b.get_queue_meta_field("paused").await.unwrap(), None);
    assert_eq!(s.events_named("resumed").await.len(), 1);
    assert_eq!(s.take("t").await.id, a);
}

pub async fn drain_removes_waiting_then_delayed_but_keeps_scheduler_jobs<S: Store>() {
    use bullmq_core::backend::Queries;
    let s = Sec::<S>::new().await;
    let active = s.add_id("w1", JobOptions::new()).await;
    let waiting = s.add_id("w2", JobOptions::new()).await;
    let prioritized = s.add_id("p1", JobOptions::new().priority(3)).await;
    let delayed = s
        .add_id("d1", JobOptions::new().delay(Duration::from_secs(10)))
        .await;
    let iteration = scheduler_iteration(&s).await;
    assert_eq!(s.take("t").await.id, active);

    s.b.drain(false).await.unwrap();
    assert_eq!(s.state(&waiting).await, None);
    assert_eq!(s.state(&prioritized).await, None);
    assert_eq!(
        s.state(&delayed).await,
        Some(JobState::Delayed),
        "kept unless asked"
    );
    assert_eq!(s.state(&active).await, Some(JobState::Active));
    assert_eq!(s.state(&iteration).await, Some(JobState::Delayed));

    s.b.drain(true).await.unwrap();
    assert_eq!(s.state(&delayed).await, None);
    assert!(s.b.get_job(&delayed).await.unwrap().is_none());
    assert_eq!(s.state(&active).await, Some(JobState::Active));
    assert_eq!(
        s.state(&iteration).await,
        Some(JobState::Delayed),
        "scheduler iterations stay"
    );
}

pub async fn clean_removes_old_finished_jobs_up_to_the_limit<S: Store>() {
    use bullmq_core::backend::Queries;
    let s = Sec::<S>::new().await;
    s.finish_in_turn(
        &[("c1", true), ("f1", false), ("c2", true), ("c3", true)],
        "null",
    )
    .await;
    // Finished: c1 at T0, f1 at T0 + 1 s, c2 at T0 + 2 s, c3 at T0 + 3 s.
    let cut = T0 + 2_500;
    let clean = |state, limit| s.b.clean_jobs_by_state(state, cut, limit);
    let first = clean(JobState::Completed, 1).await.unwrap();
    assert_eq!(first, [id("c1")], "limit 1, oldest first");
    let rest = clean(JobState::Completed, 0).await.unwrap();
    assert_eq!(rest, [id("c2")], "0 = no limit; c3 is too recent");
    assert!(s.b.get_job(&id("c1")).await.unwrap().is_none());
    assert_eq!(s.state(&id("c3")).await, Some(JobState::Completed));
    let cleaned = s.events_named("cleaned").await;
    let counts: Vec<&str> = cleaned.iter().map(|e| e["count"].as_str()).collect();
    assert_eq!(counts, ["1", "1"]);

    let failed = clean(JobState::Failed, 0).await.unwrap();
    assert_eq!(failed, [id("f1")]);
    assert!(s.b.get_job(&id("f1")).await.unwrap().is_none());
}

pub async fn clean_waiting_prioritized_and_delayed_by_added_time<S: Store>() {
    let s = Sec::<S>::new().await;
    s.add_id("old", JobOptions::new()).await;
    s.add_id("old2", JobOptions::new()).await;
    s.add_id("prio", JobOptions::new().priority(2)).await;
    s.add_id("late", JobOptions::new().delay(Duration::from_secs(60)))
        .await;
    s.clock.advance(Duration::from_secs(5));
    s.add_id("new", JobOptions::new()).await;

    let before = T0 + 1_000;
    for (state, limit, expected, why) in [
        (
            JobState::Waiting,
            1,
            &["old"][..],
            "a limited clean starts at the oldest",
        ),
        (JobState::Waiting, 0, &["old2"], "then the rest"),
        (JobState::Prioritized, 0, &["prio"], "prioritized jobs"),
        (JobState::Delayed, 0, &["late"], "delayed jobs"),
        (JobState::WaitingChildren, 0, &[], "none waits for children"),
    ] {
        let cleaned = s.b.clean_jobs_by_state(state, before, limit).await;
        let expected: Vec<JobId> = expected.iter().map(|i| id(i)).collect();
        assert_eq!(
            cleaned.unwrap(),
            expected,
            "{state:?}, limit {limit}: {why}"
        );
    }
    for gone in ["old", "old2", "prio", "late"] {
        assert_eq!(s.state(&id(gone)).await, None, "{gone}");
    }
    assert_eq!(s.state(&id("new")).await, Some(JobState::Waiting));
}

pub async fn obliterate_refuses_unpaused_and_active_then_removes_in_batches<S: Store>() {
    let s = Sec::<S>::new().await;
    let other = s.sibling("other").await;
    let kept = other
        .add("keep", &serde_json::json!({}), JobOptions::new())
        .await
        .unwrap();
    for job in ["a", "b", "c"] {
        s.add_id(job, JobOptions::new()).await;
    }
    assert_eq!(s.take("t").await.id.as_str(), "a");
    let args = ObliterateArgs {
        force: false,
        count: 2,
    };

    assert_eq!(
        s.b.obliterate(args).await.unwrap(),
        Err(ObliterateRefusal::NotPaused)
    );
    s.b.pause(true).await.unwrap();
    assert_eq!(
        s.b.obliterate(args).await.unwrap(),
        Err(ObliterateRefusal::ActiveJobs)
    );
    for job in ["a", "b", "c"] {
        assert!(
            s.state(&id(job)).await.is_some(),
            "a refusal removes nothing"
        );
    }

    let forced = ObliterateArgs {
        force: true,
        count: 2,
    };
    assert_eq!(s.b.obliterate(forced).await.unwrap(), Ok(Batch::More));
    until_done(5, || async {
        s.b.obliterate(forced).await.unwrap().unwrap()
    })
    .await;
    for job in ["a", "b", "c"] {
        assert_eq!(s.state(&id(job)).await, None, "{job}");
    }
    assert!(
        s.b.get_queue_meta().await.unwrap().is_empty(),
        "the meta goes too"
    );
    assert_eq!(
        other.get_job_state(&kept.id).await.unwrap(),
        Some(JobState::Waiting),
        "other queues are untouched"
    );
}

pub async fn retry_finished_jobs_moves_batches_back_to_wait<S: Store>() {
    let s = Sec::<S>::new().await;
    s.finish_in_turn(&[("f1", false), ("f2", false), ("c1", true)], "1")
        .await;
    s.clock.advance(Duration::from_secs(60));
    s.add_id("f3", JobOptions::new()).await;
    s.fail(&id("f3"), "late").await;

    let before = T0 + 10_000;
    let b = &s.b;
    let retry =
        |state, count| async move { b.retry_finished_jobs(state, count, before).await.unwrap() };
    assert_eq!(retry(FinishedState::Failed, 1).await, Batch::More);
    assert_eq!(
        s.state(&id("f1")).await,
        Some(JobState::Waiting),
        "oldest first"
    );
    assert_eq!(s.state(&id("f2")).await, Some(JobState::Failed));
    until_done(3, || retry(FinishedState::Failed, 1)).await;
    assert_eq!(s.state(&id("f2")).await, Some(JobState::Waiting));
    assert_eq!(
        s.state(&id("f3")).await,
        Some(JobState::Failed),
        "finished after the cut-off"
    );
    assert_eq!(s.state(&id("c1")).await, Some(JobState::Completed));
    let retried = s.job(&id("f1")).await;
    // (Its attempts start over on PostgreSQL only; each store pins its own.)
    assert_eq!(retried.failed_reason, None);
    assert_eq!(retried.finished_on, None);
    assert_eq!(retried.processed_on, None);
    let waiting = s.events_named("waiting").await;
    assert!(waiting.iter().any(|e| e["jobId"] == "f1"), "{waiting:?}");

    until_done(3, || retry(FinishedState::Completed, 10)).await;
    assert_eq!(s.state(&id("c1")).await, Some(JobState::Waiting));
}

pub async fn promote_jobs_makes_delayed_jobs_ready_earliest_first<S: Store>() {
    let s = Sec::<S>::new().await;
    s.add_id("d2", JobOptions::new().delay(Duration::from_secs(120)))
        .await;
    s.add_id("d1", JobOptions::new().delay(Duration::from_secs(60)))
        .await;
    s.add_id("w", JobOptions::new()).await;

    assert_eq!(s.b.promote_jobs(1).await.unwrap(), Batch::More);
    assert_eq!(
        s.state(&id("d1")).await,
        Some(JobState::Waiting),
        "earliest first"
    );
    assert_eq!(s.state(&id("d2")).await, Some(JobState::Delayed));
    until_done(3, || async { s.b.promote_jobs(1).await.unwrap() }).await;
    assert_eq!(s.state(&id("d2")).await, Some(JobState::Waiting));
}

pub async fn set_rate_limit_holds_the_queue_until_removed<S: Store>() {
    use bullmq_core::backend::Queries;
    let s = Sec::<S>::new().await;
    let a = s.add_id("a", JobOptions::new()).await;
    assert!(!s.b.remove_rate_limit_key().await.unwrap(), "no window yet");

    s.b.set_rate_limit(Duration::from_secs(30)).await.unwrap();
    let ttl = s.b.get_rate_limit_ttl(None).await.unwrap();
    assert!(
        ttl > Duration::from_secs(25) && ttl <= Duration::from_secs(30),
        "{ttl:?}"
    );
    let limited = FetchParams {
        limiter: Some(RateLimiter {
            max: 10,
            duration: Duration::from_secs(1),
        }),
        ..fetch("t")
    };
    let next = s.b.move_to_active(&limited).await.unwrap();
    assert!(next.job.is_none(), "a rate-limited queue hands out nothing");
    assert!(next.rate_limit_ttl.is_some());

    assert!(s.b.remove_rate_limit_key().await.unwrap());
    assert!(!s.b.remove_rate_limit_key().await.unwrap());
    assert_eq!(s.b.get_rate_limit_ttl(None).await.unwrap(), Duration::ZERO);
    let next = s.b.move_to_active(&limited).await.unwrap();
    assert_eq!(next.job.unwrap().id, a);
}

pub async fn remove_orphaned_jobs_leaves_real_jobs<S: Store>() {
    let s = Sec::<S>::new().await;
    let a = s.add_id("a", JobOptions::new()).await;
    assert_eq!(s.b.remove_orphaned_jobs(1000, 0).await.unwrap(), 0);
    assert_eq!(s.state(&a).await, Some(JobState::Waiting));
}
