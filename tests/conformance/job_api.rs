//! A job's own methods (Node.js's `Job`): state predicates, manual moves with a lock token,
//! retries, removal, logs, children and dependencies.

use std::collections::BTreeMap;
use std::time::Duration;

use bullmq::ScriptErrorCode;
use bullmq::backend::{
    DependenciesQuery, DependencyKind, Lifecycle, Queries, Range, ReprocessOptions,
};
use bullmq::flow::{FlowJob, FlowProducer};
use bullmq::job::FinishedState;
use bullmq::{Error, Job, JobId, JobOptions, JobRef, JobState, ParentOptions};
use bullmq::{FailOutcome, JobError, JobFailure};
use serde_json::json;

use crate::ctx::{Ctx, fast, now_ms};
use crate::store::Store;
use crate::support::failing::{assert_retried_later, fail_attempt, fatal, retried_later};
use crate::support::{script_code as code, token};

fn id(s: &str) -> JobId {
    JobId::from(s)
}

/// The size of `p`'s dependency list `kind`, asked for alone.
async fn dependencies<B: Queries>(p: &JobRef<'_, B>, kind: DependencyKind) -> u64 {
    let counts = p.get_dependencies_count(&[kind]).await.unwrap();
    assert_eq!(counts.len(), 1, "{counts:?}");
    assert_eq!(counts[0].0, kind);
    counts[0].1
}

impl<S: Store> Ctx<S> {
    async fn add_id(&self, job_id: &str, opts: JobOptions) -> Job {
        self.queue
            .add("job", &json!({ "n": job_id }), opts.job_id(job_id))
            .await
            .unwrap()
    }

    /// Parent `p` in waiting-children with children `ids` (each with `opts(id)`), in order,
    /// all in this case's queue, added by a `FlowProducer`.
    async fn family(&self, ids: &[&str], opts: impl Fn(&str) -> JobOptions) {
        let mut parent = FlowJob::new(self.name.clone(), "parent", json!({}))
            .opts(JobOptions::new().job_id("p"));
        for child in ids {
            parent = parent.child(
                FlowJob::new(self.name.clone(), "job", json!({ "n": child }))
                    .opts(opts(child).job_id(*child)),
            );
        }
        FlowProducer::new(self.backend().await)
            .add(parent)
            .await
            .unwrap();
    }

    /// Adds job `id` with `opts` and takes the next job with token "t" (the cases leave no
    /// other job waiting); a handle on job `id`.
    async fn add_and_take(&self, job_id: &str, opts: JobOptions) -> JobRef<'_, S::B> {
        self.add_id(job_id, opts).await;
        self.take("t").await;
        self.queue.job(id(job_id))
    }
}

pub async fn state_predicates_delay_and_priority<S: Store>() {
    let ctx = Ctx::<S>::new("predicates").await;
    ctx.add_id("w", JobOptions::new()).await;
    ctx.add_id("p", JobOptions::new().priority(3)).await;
    ctx.add_id("d", JobOptions::new().delay(Duration::from_secs(10)))
        .await;
    let (w, p, d) = (
        ctx.queue.job(id("w")),
        ctx.queue.job(id("p")),
        ctx.queue.job(id("d")),
    );
    assert!(w.is_waiting().await.unwrap());
    assert!(!w.is_delayed().await.unwrap());
    assert!(p.is_prioritized().await.unwrap());
    assert!(!p.is_waiting().await.unwrap());
    assert!(d.is_delayed().await.unwrap());
    assert!(!d.is_completed().await.unwrap());
    assert!(!d.is_failed().await.unwrap());
    assert!(!d.is_active().await.unwrap());
    assert!(!d.is_waiting_children().await.unwrap());

    // changeDelay reschedules from now.
    let before = now_ms();
    d.change_delay(Duration::from_secs(60)).await.unwrap();
    assert!(d.is_delayed().await.unwrap());
    let job = ctx.job(&id("d")).await;
    assert_eq!(job.delay, Duration::from_secs(60));
    assert_eq!(
        ctx.queue
            .get_delayed_count(Some(before + 59_000))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        ctx.queue
            .get_delayed_count(Some(now_ms() + 61_000))
            .await
            .unwrap(),
        1
    );
    // Only a delayed job's delay can change.
    let err = w.change_delay(Duration::from_secs(1)).await.unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::NotInState);

    d.promote().await.unwrap();
    assert!(d.is_waiting().await.unwrap());
    assert_eq!(ctx.job(&id("d")).await.delay, Duration::ZERO);

    w.change_priority(7, false).await.unwrap();
    assert!(w.is_prioritized().await.unwrap());
    assert_eq!(ctx.job(&id("w")).await.priority, 7);
    // "d" has no priority: first; then "p" (3) before "w" (7).
    assert_eq!(ctx.take("t").await, id("d"));
    assert_eq!(ctx.take("t").await, id("p"));
    assert_eq!(ctx.take("t").await, id("w"));
    assert!(d.is_active().await.unwrap());
}

pub async fn manual_moves_refuse_another_token<S: Store>() {
    let ctx = Ctx::<S>::new("tokens").await;
    ctx.add_id("a", JobOptions::new()).await;
    assert_eq!(ctx.take("right").await, id("a"));
    let a = ctx.queue.job(id("a"));
    let wrong = token("wrong");
    let err = a.move_to_completed(&1, &wrong, false).await.unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::LockMismatch);
    let err = a
        .move_to_failed(&JobFailure::new("x"), &wrong, false)
        .await
        .unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::LockMismatch);
    let err = a
        .move_to_delayed(now_ms() + 1000, &wrong)
        .await
        .unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::LockMismatch);
    // Redis refuses (LockMismatch, see `divergent`); upstream's PostgreSQL ignores the move.
    let _ = a.move_to_wait(&wrong).await;
    // Nothing to wait for: false with the right token (Redis does not even check the token
    // then, see `divergent`).
    assert!(
        !a.move_to_waiting_children(&token("right"), None)
            .await
            .unwrap()
    );
    assert!(a.is_active().await.unwrap());

    assert!(
        !a.extend_lock(&wrong, Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(
        a.extend_lock(&token("right"), Duration::from_secs(60))
            .await
            .unwrap()
    );

    let finished = a
        .move_to_completed(&json!({"ok": true}), &token("right"), false)
        .await
        .unwrap();
    assert!(finished.finished_on >= ctx.job(&id("a")).await.timestamp);
    let job = ctx.job(&id("a")).await;
    assert_eq!(job.return_value.as_deref(), Some(r#"{"ok":true}"#));
    assert_eq!(job.finished_on, Some(finished.finished_on));
    assert!(a.is_completed().await.unwrap());
    // A finished job's lock is gone.
    assert!(
        !a.extend_lock(&token("right"), Duration::from_secs(60))
            .await
            .unwrap()
    );

    // A parent with a pending child (in another queue) parks in waiting-children, with its
    // own token only, and only for a child it waits for.
    ctx.add_id("parent", JobOptions::new()).await;
    let kids = ctx.other("kids").await;
    let under_parent = ParentOptions::new("parent", ctx.queue.backend().qualified_name());
    kids.add(
        "child",
        &json!({}),
        JobOptions::new().job_id("child").parent(under_parent),
    )
    .await
    .unwrap();
    assert_eq!(ctx.take("ptok").await, id("parent"));
    let parent = ctx.queue.job(id("parent"));
    let err = parent
        .move_to_waiting_children(&wrong, None)
        .await
        .unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::LockMismatch);
    // (Naming a job that is not a pending child answers false on Redis only; upstream's
    // PostgreSQL parks the parent all the same: see `redis_job_api.rs`.)
    let child = ParentOptions::new("child", kids.backend().qualified_name());
    assert!(
        parent
            .move_to_waiting_children(&token("ptok"), Some(&child))
            .await
            .unwrap()
    );
    assert!(parent.is_waiting_children().await.unwrap());

    // Without a worker's settings a handle cannot take the next job: refused before any write.
    ctx.add_id("b", JobOptions::new()).await;
    ctx.add_id("c", JobOptions::new()).await;
    assert_eq!(ctx.take("t").await, id("b"));
    let b = ctx.queue.job(id("b"));
    for err in [
        b.move_to_completed(&1, &token("t"), true)
            .await
            .unwrap_err(),
        b.move_to_failed(&JobFailure::new("x"), &token("t"), true)
            .await
            .map(|_| ())
            .unwrap_err(),
    ] {
        assert!(matches!(err, Error::Invalid(_)), "{err}");
        assert!(err.to_string().contains("fetch_next"), "{err}");
    }
    assert!(b.is_active().await.unwrap());
    assert!(ctx.queue.job(id("c")).is_waiting().await.unwrap());
}

pub async fn move_to_delayed_and_back_to_wait<S: Store>() {
    let ctx = Ctx::<S>::new("delays").await;
    let a = ctx.add_and_take("a", JobOptions::new()).await;
    let delay = a
        .move_to_delayed(now_ms() + 5000, &token("t"))
        .await
        .unwrap();
    assert!(delay > Duration::from_millis(4900) && delay <= Duration::from_secs(5));
    assert!(a.is_delayed().await.unwrap());
    assert_eq!(
        ctx.job(&id("a")).await.attempts_made,
        0,
        "a delay is not an attempt"
    );
    assert_eq!(
        ctx.queue
            .get_delayed_count(Some(now_ms() + 4000))
            .await
            .unwrap(),
        0
    );
    // The lock went with it.
    assert!(
        !a.extend_lock(&token("t"), Duration::from_secs(5))
            .await
            .unwrap()
    );

    a.promote().await.unwrap();
    ctx.take("t2").await;
    let err = a.move_to_delayed(now_ms(), &token("t")).await.unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::LockMismatch);
    let ttl = a.move_to_wait(&token("t2")).await.unwrap();
    assert_eq!(ttl, Duration::ZERO);
    assert!(a.is_waiting().await.unwrap());
    assert!(
        !a.extend_lock(&token("t2"), Duration::from_secs(5))
            .await
            .unwrap()
    );
}

pub async fn move_to_failed_retries_and_trims_stacktraces<S: Store>() {
    let ctx = Ctx::<S>::new("failing").await;
    ctx.add_id("a", JobOptions::new().attempts(3).stack_trace_limit(2))
        .await;
    let a = ctx.queue.job(id("a"));
    for n in 1..=2 {
        ctx.take("t").await;
        let failure = JobFailure::new(format!("boom {n}")).stack(format!("Error: boom {n}"));
        let outcome = fail_attempt(&a, &failure).await;
        assert_eq!(outcome, FailOutcome::Retried);
        assert!(a.is_waiting().await.unwrap());
        let job = ctx.job(&id("a")).await;
        assert_eq!(job.attempts_made, n);
        assert_eq!(job.failed_reason, Some(format!("boom {n}")));
    }
    ctx.take("t").await;
    let failure = JobFailure::new("boom 3").stack("Error: boom 3");
    let outcome = fail_attempt(&a, &failure).await;
    assert!(matches!(outcome, FailOutcome::Failed(_)), "{outcome:?}");
    let job = ctx.job(&id("a")).await;
    assert_eq!(job.stacktrace, ["Error: boom 2", "Error: boom 3"]);
    assert_eq!(job.attempts_made, 3);
    assert!(a.is_failed().await.unwrap());

    // An unrecoverable failure skips the remaining attempts; limit 0 keeps no trace.
    let z = ctx
        .add_and_take("z", JobOptions::new().attempts(5).stack_trace_limit(0))
        .await;
    let outcome = fail_attempt(&z, &fatal()).await;
    assert!(matches!(outcome, FailOutcome::Failed(_)));
    assert!(ctx.job(&id("z")).await.stacktrace.is_empty());
    assert!(z.is_failed().await.unwrap());

    // With a backoff the retry waits in delayed.
    let b = ctx.add_and_take("b", retried_later()).await;
    let outcome = fail_attempt(&b, &JobFailure::new("later")).await;
    assert_retried_later(&outcome);
    assert!(b.is_delayed().await.unwrap());
    assert_eq!(ctx.job(&id("b")).await.attempts_made, 1);
    assert_eq!(
        ctx.queue
            .get_delayed_count(Some(now_ms() + 2000))
            .await
            .unwrap(),
        0
    );
}

/// `attempts` past `u32`, as Node.js may store it (kept raw in the options' `extra`), still
/// leaves attempts to go: a job failed by hand and one failed by a worker are both retried.
/// The manual path once read it as 0 and failed the job for good.
pub async fn an_out_of_range_attempts_retries_by_hand_as_in_a_worker<S: Store>() {
    let ctx = Ctx::<S>::new("attempts-range").await;
    let mut opts = JobOptions::new();
    opts.extra.insert("attempts".to_owned(), json!(1e10));
    ctx.add_id("by-hand", opts.clone()).await;
    ctx.take("t").await;
    let failure = JobFailure::new("boom").stack("Error: boom");
    let outcome = fail_attempt(&ctx.queue.job(id("by-hand")), &failure).await;
    assert_eq!(outcome, FailOutcome::Retried);
    let by_hand = ctx.job(&id("by-hand")).await;
    assert_eq!(by_hand.attempts_made, 1);
    assert_eq!(ctx.state(&id("by-hand")).await, Some(JobState::Waiting));

    let by_worker = ctx.add_id("by-worker", opts).await.id;
    let worker = ctx
        .worker(fast(), |job, _| async move {
            if job.attempts_made == 0 {
                Err(JobError::failed("boom"))
            } else {
                Ok(json!("done"))
            }
        })
        .await;
    for job_id in [&id("by-hand"), &by_worker] {
        ctx.wait_state(job_id, JobState::Completed).await;
        let job = ctx.job(job_id).await;
        assert_eq!(job.failed_reason.as_deref(), Some("boom"), "{job_id}");
        assert_eq!(job.attempts_made, 2, "{job_id}");
    }
    worker.close().await;
}

pub async fn retry_completed_and_failed_jobs<S: Store>() {
    let ctx = Ctx::<S>::new("retry").await;
    let a = ctx.add_and_take("a", JobOptions::new()).await;
    a.move_to_completed(&"done", &token("t"), false)
        .await
        .unwrap();
    let err = a
        .retry(FinishedState::Failed, ReprocessOptions::default())
        .await
        .unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::NotInState);
    let opts = ReprocessOptions {
        reset_attempts_made: true,
        reset_attempts_started: true,
    };
    a.retry(FinishedState::Completed, opts).await.unwrap();
    assert!(a.is_waiting().await.unwrap());
    let job = ctx.job(&id("a")).await;
    assert_eq!(job.return_value, None);
    assert_eq!(job.finished_on, None);
    assert_eq!((job.attempts_made, job.attempts_started), (0, 0));
    assert_eq!(ctx.count_in(JobState::Completed).await, 0);

    // A failed job keeps its counters unless asked.
    ctx.take("t").await;
    fail_attempt(&a, &JobFailure::new("no")).await;
    assert!(a.is_failed().await.unwrap());
    a.retry(FinishedState::Failed, ReprocessOptions::default())
        .await
        .unwrap();
    assert!(a.is_waiting().await.unwrap());
    let job = ctx.job(&id("a")).await;
    assert_eq!(job.attempts_made, 1);
    assert_eq!(job.failed_reason, None);

    let err = ctx
        .queue
        .job(id("ghost"))
        .retry(FinishedState::Failed, ReprocessOptions::default())
        .await
        .unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::JobNotFound);
}

pub async fn retry_jobs_and_promote_jobs_in_bulk<S: Store>() {
    let ctx = Ctx::<S>::new("bulk-retry").await;
    for n in ["a", "b", "c"] {
        ctx.add_id(n, JobOptions::new()).await;
        ctx.take("t").await;
        fail_attempt(&ctx.queue.job(id(n)), &JobFailure::new("no")).await;
    }
    assert_eq!(ctx.count_in(JobState::Failed).await, 3);
    ctx.queue
        .retry_jobs(FinishedState::Failed, 10, None)
        .await
        .unwrap();
    assert_eq!(ctx.count_in(JobState::Failed).await, 0);
    assert_eq!(ctx.count_in(JobState::Waiting).await, 3);

    for n in ["d1", "d2"] {
        ctx.add_id(n, JobOptions::new().delay(Duration::from_secs(60)))
            .await;
    }
    ctx.queue.promote_jobs(10).await.unwrap();
    assert_eq!(ctx.count_in(JobState::Delayed).await, 0);
    assert_eq!(ctx.count_in(JobState::Waiting).await, 5);
}

pub async fn remove_refuses_a_locked_job_and_takes_its_logs<S: Store>() {
    let ctx = Ctx::<S>::new("remove-locked").await;
    let a = ctx.add_and_take("a", JobOptions::new()).await;
    assert!(!a.remove(true).await.unwrap());
    assert!(ctx.queue.get_job(&id("a")).await.unwrap().is_some());
    a.move_to_wait(&token("t")).await.unwrap();
    a.log("line").await.unwrap();
    assert!(a.remove(true).await.unwrap());
    assert!(ctx.queue.get_job(&id("a")).await.unwrap().is_none());
    assert_eq!(a.get_state().await.unwrap(), None);
    let logs = ctx.queue.get_job_logs(&id("a"), Range::ALL).await.unwrap();
    assert_eq!((logs.logs.len(), logs.count), (0, 0));
    // Added again under the same id, it starts without the old logs.
    ctx.add_id("a", JobOptions::new()).await;
    let logs = ctx.queue.get_job_logs(&id("a"), Range::ALL).await.unwrap();
    assert!(logs.logs.is_empty());
}

pub async fn logs_are_trimmed_with_keep_logs<S: Store>() {
    let ctx = Ctx::<S>::new("logs").await;
    let job = ctx.add_id("a", JobOptions::new().keep_logs(2)).await;
    // With the job at hand its keepLogs applies.
    let handle = ctx.queue.job_of(&job);
    assert_eq!(handle.log("one").await.unwrap(), 1);
    assert_eq!(handle.log("two").await.unwrap(), 2);
    assert_eq!(handle.log("three").await.unwrap(), 2);
    let all = Range::ALL_OLDEST_FIRST;
    let logs = ctx.queue.get_job_logs(&id("a"), all).await.unwrap();
    assert_eq!(logs.logs, ["two", "three"]);
    // By id there is no option to read: every line is kept. (What it returns differs, see
    // `divergent::log_by_id_returns_the_number_of_lines`.)
    let by_id = ctx.queue.job(id("a"));
    by_id.log("four").await.unwrap();
    let logs = ctx.queue.get_job_logs(&id("a"), all).await.unwrap();
    assert_eq!(logs.logs, ["two", "three", "four"]);
    // The queue's own call takes the limit explicitly.
    assert_eq!(
        ctx.queue
            .add_job_log(&id("a"), "five", Some(2))
            .await
            .unwrap(),
        2
    );
    let logs = ctx.queue.get_job_logs(&id("a"), all).await.unwrap();
    assert_eq!(logs.logs, ["four", "five"]);
    let newest = ctx
        .queue
        .get_job_logs(
            &id("a"),
            Range {
                start: 0,
                end: 0,
                asc: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (newest.logs.as_slice(), newest.count),
        (&["five".to_owned()][..], 2)
    );
    by_id.clear_logs(Some(1)).await.unwrap();
    assert_eq!(
        ctx.queue.get_job_logs(&id("a"), all).await.unwrap().logs,
        ["five"]
    );
    by_id.clear_logs(None).await.unwrap();
    assert_eq!(
        ctx.queue.get_job_logs(&id("a"), all).await.unwrap().count,
        0
    );

    let missing = ctx.queue.job(id("nope"));
    assert_eq!(
        code(&missing.update_progress(&1).await.unwrap_err()),
        ScriptErrorCode::JobNotFound
    );
    assert_eq!(
        code(&missing.update_data(&1).await.unwrap_err()),
        ScriptErrorCode::JobNotFound
    );
    assert_eq!(
        code(&missing.log("x").await.unwrap_err()),
        ScriptErrorCode::JobNotFound
    );
}

pub async fn children_values_failures_and_dependencies<S: Store>() {
    let ctx = Ctx::<S>::new("deps").await;
    ctx.family(&["c1", "c2", "c3"], |child| {
        JobOptions::new().ignore_dependency_on_failure(child == "c2")
    })
    .await;
    let p = ctx.queue.job(id("p"));
    assert!(p.is_waiting_children().await.unwrap());
    let counts = p.get_dependencies_count(&[]).await.unwrap();
    assert_eq!(
        counts,
        [
            (DependencyKind::Processed, 0),
            (DependencyKind::Unprocessed, 3),
            (DependencyKind::Ignored, 0),
            (DependencyKind::Failed, 0),
        ]
    );
    assert_eq!(ctx.take("t").await, id("c1"));
    ctx.queue
        .job(id("c1"))
        .move_to_completed(&json!({"v": 1}), &token("t"), false)
        .await
        .unwrap();
    assert_eq!(ctx.take("t").await, id("c2"));
    fail_attempt(&ctx.queue.job(id("c2")), &JobFailure::new("c2 broke")).await;
    let (k1, k2, k3) = (ctx.key(&id("c1")), ctx.key(&id("c2")), ctx.key(&id("c3")));
    assert_eq!(
        p.get_children_values().await.unwrap(),
        BTreeMap::from([(k1.clone(), json!({"v": 1}))])
    );
    let ignored = BTreeMap::from([(k2, "c2 broke".to_owned())]);
    assert_eq!(p.get_ignored_children_failures().await.unwrap(), ignored);
    // Node.js's older name for the same.
    #[allow(deprecated)]
    let failed = p.get_failed_children_values().await.unwrap();
    assert_eq!(failed, ignored);
    let counts = p
        .get_dependencies_count(&[DependencyKind::Ignored, DependencyKind::Unprocessed])
        .await
        .unwrap();
    assert_eq!(
        counts,
        [
            (DependencyKind::Ignored, 1),
            (DependencyKind::Unprocessed, 1)
        ]
    );
    let deps = p
        .get_dependencies(&DependenciesQuery {
            lists: vec![
                (DependencyKind::Processed, 0, 20),
                (DependencyKind::Unprocessed, 0, 20),
            ],
        })
        .await
        .unwrap();
    assert_eq!(
        deps.processed,
        Some((vec![(k1, r#"{"v":1}"#.to_owned())], 0))
    );
    assert_eq!(deps.unprocessed, Some((vec![k3.clone()], 0)));
    // The queue's getter pages the same lists, with the jobs.
    let page = ctx
        .queue
        .get_dependencies(&id("p"), DependencyKind::Processed, 0, None)
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(
        page.items,
        [(ctx.key(&id("c1")), Some(r#"{"v":1}"#.to_owned()))]
    );
    assert_eq!(page.jobs.len(), 1);
    assert_eq!(page.jobs[0].id, id("c1"));
    let page = ctx
        .queue
        .get_dependencies(&id("p"), DependencyKind::Unprocessed, 0, None)
        .await
        .unwrap();
    assert_eq!(page.items, [(k3, None)]);
    assert!(p.is_waiting_children().await.unwrap());

    // Detaching the last pending child frees the parent.
    let c3 = ctx.queue.job(id("c3"));
    assert!(c3.remove_child_dependency().await.unwrap());
    assert!(
        !c3.remove_child_dependency().await.unwrap(),
        "no parent any more"
    );
    assert!(ctx.job(&id("c3")).await.parent_key.is_none());
    assert_eq!(dependencies(&p, DependencyKind::Unprocessed).await, 0);
    assert!(p.is_waiting().await.unwrap());
}

pub async fn remove_unprocessed_children_leaves_finished_ones<S: Store>() {
    let ctx = Ctx::<S>::new("prune").await;
    ctx.family(&["c1", "c2", "c3"], |_| JobOptions::new()).await;
    assert_eq!(ctx.take("t").await, id("c1"));
    ctx.queue
        .job(id("c1"))
        .move_to_completed(&0, &token("t"), false)
        .await
        .unwrap();
    let p = ctx.queue.job(id("p"));
    p.remove_unprocessed_children().await.unwrap();
    assert!(
        ctx.queue.get_job(&id("c1")).await.unwrap().is_some(),
        "a processed child stays"
    );
    assert!(ctx.queue.get_job(&id("c2")).await.unwrap().is_none());
    assert!(ctx.queue.get_job(&id("c3")).await.unwrap().is_none());
    // Redis then drops them from the parent's dependencies and releases it; upstream's
    // PostgreSQL leaves both (see `divergent`).
    assert_eq!(dependencies(&p, DependencyKind::Processed).await, 1);
}

pub async fn remove_with_children_removes_the_tree<S: Store>() {
    let ctx = Ctx::<S>::new("remove-tree").await;
    ctx.family(&["c1", "c2"], |_| JobOptions::new()).await;
    ctx.add_id("other", JobOptions::new()).await;
    // A locked child keeps the whole tree.
    assert_eq!(ctx.take("t").await, id("c1"));
    assert!(!ctx.queue.remove(&id("p"), true).await.unwrap());
    assert!(ctx.queue.get_job(&id("p")).await.unwrap().is_some());
    ctx.queue
        .job(id("c1"))
        .move_to_wait(&token("t"))
        .await
        .unwrap();
    assert!(ctx.queue.remove(&id("p"), true).await.unwrap());
    for gone in ["p", "c1", "c2"] {
        assert!(
            ctx.queue.get_job(&id(gone)).await.unwrap().is_none(),
            "{gone} left"
        );
    }
    assert!(ctx.queue.get_job(&id("other")).await.unwrap().is_some());
    assert_eq!(ctx.queue.count().await.unwrap(), 1);
}

pub async fn removing_a_child_releases_its_parent<S: Store>() {
    let ctx = Ctx::<S>::new("remove-child").await;
    ctx.family(&["c1"], |_| JobOptions::new()).await;
    assert!(ctx.queue.remove(&id("c1"), false).await.unwrap());
    let p = ctx.queue.job(id("p"));
    assert!(
        p.is_waiting().await.unwrap(),
        "{:?}",
        p.get_state().await.unwrap()
    );
    assert_eq!(dependencies(&p, DependencyKind::Unprocessed).await, 0);
}

pub async fn a_child_of_a_missing_parent_is_refused<S: Store>() {
    let ctx = Ctx::<S>::new("orphans").await;
    let parents = ctx.queue.backend().qualified_name();
    let parent = ParentOptions::new("nope", parents);
    let err = ctx
        .queue
        .add("child", &json!({}), JobOptions::new().parent(parent))
        .await
        .unwrap_err();
    assert_eq!(code(&err), ScriptErrorCode::ParentNotFound);
    // Upstream's text, naming the parent's key.
    assert_eq!(
        err.to_string(),
        format!("Missing key for parent job {parents}:nope. addJob")
    );
    assert_eq!(ctx.queue.count().await.unwrap(), 0);
}

pub async fn job_of_uses_the_jobs_own_options<S: Store>() {
    let ctx = Ctx::<S>::new("job-of").await;
    let job = ctx
        .add_id(
            "a",
            JobOptions::new().remove_on_complete(bullmq::KeepJobs::RemoveAll),
        )
        .await;
    let failing = ctx
        .add_id(
            "b",
            JobOptions::new().remove_on_fail(bullmq::KeepJobs::RemoveAll),
        )
        .await;
    let handle = ctx.queue.job_of(&job);
    assert_eq!(handle.id(), &id("a"));
    assert!(handle.job().is_some());
    assert_eq!(ctx.take("t").await, id("a"));
    handle
        .move_to_completed(&1, &token("t"), false)
        .await
        .unwrap();
    assert!(
        ctx.queue.get_job(&id("a")).await.unwrap().is_none(),
        "removed as it completed"
    );
    assert_eq!(ctx.count_in(JobState::Completed).await, 0);
    assert_eq!(ctx.take("t").await, id("b"));
    let outcome = fail_attempt(&ctx.queue.job_of(&failing), &JobFailure::new("no")).await;
    assert!(matches!(outcome, FailOutcome::Failed(_)));
    assert!(
        ctx.queue.get_job(&id("b")).await.unwrap().is_none(),
        "removed as it failed"
    );
}
