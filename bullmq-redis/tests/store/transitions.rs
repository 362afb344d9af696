//! Only what is Redis-specific; the shared cases are the conformance suite's `transitions.rs`.
//!
//! `Transitions` on Redis: every move read back from the keys and the events stream, compared
//! with what upstream's scripts write when Node.js calls them.

use crate::support::transitions as support;

use std::time::Duration;

use bullmq_core::backend::{
    CompleteArgs, DelayArgs, FieldUpdates, LockToken, ReprocessOptions, StalledCheck, Transitions,
};
use bullmq_core::job::FinishedState;
use bullmq_core::options::KeepJobs;
use bullmq_core::{Error, JobId, JobOptions, ScriptErrorCode};
use bullmq_test_support::finishing;
use bullmq_test_support::held::{assert_held_back, one_per_window};
use support::{Ctx, T0, entry, fetch, worker_settings};

fn complete(token: &str, value: &str, keep: KeepJobs) -> CompleteArgs {
    CompleteArgs {
        keep,
        ..finishing::complete_args(token, value)
    }
}

/// Completes `job` with `token`, returning `value` and keeping it as `keep` says.
async fn finish(
    ctx: &Ctx,
    job: &bullmq_core::Job,
    token: &str,
    value: &str,
    keep: KeepJobs,
) -> bullmq_core::Result<bullmq_core::backend::Finished> {
    ctx.backend
        .move_to_completed(job, &complete(token, value, keep))
        .await
}

/// Completes `job` under "tok", the token the tests take their jobs with.
async fn finish_ok(
    ctx: &Ctx,
    job: &bullmq_core::Job,
    value: &str,
    keep: KeepJobs,
) -> bullmq_core::backend::Finished {
    finish(ctx, job, "tok", value, keep).await.unwrap()
}

/// The error of `result`, after asserting it is a script refusal with `code` from `command`.
#[track_caller]
fn refused<T: std::fmt::Debug>(
    result: bullmq_core::Result<T>,
    code: ScriptErrorCode,
    command: &str,
) -> Error {
    let err = result.expect_err("a script refusal");
    match &err {
        Error::Script(e) => assert_eq!((e.code, e.command), (code, command), "{err}"),
        other => panic!("expected a script refusal, got {other}"),
    }
    err
}

/// One run of the stalled-jobs sweep allowing `max` stalls, answering the jobs it moved.
async fn sweep(ctx: &Ctx, max: u32) -> Vec<JobId> {
    let check = StalledCheck {
        max_stalled_count: max,
        stalled_interval: Duration::from_secs(30),
    };
    ctx.backend.move_stalled_jobs_to_wait(&check).await.unwrap()
}

/// A delay of `delay` from T0 under "tok" that counts as an attempt and fetches nothing.
fn delay_args(delay: Duration) -> DelayArgs {
    DelayArgs {
        timestamp: T0,
        delay,
        token: Some(LockToken::new("tok")),
        skip_attempt: false,
        fields: FieldUpdates::default(),
        worker: std::sync::Arc::default(),
        fetch_next: false,
    }
}

/// Moves `parent` (locked by "tok") to waiting-children if `child` (or, with none, any child)
/// is still pending; answers whether it moved.
async fn wait_for_children(ctx: &Ctx, parent: &JobId, child: Option<&str>) -> bool {
    ctx.backend
        .move_to_waiting_children(parent, &LockToken::new("tok"), child)
        .await
        .unwrap()
}

/// The job `move_to_active` answers is the conformance suite's
/// `take_stamps_and_announces_the_job`; here, the keys it writes.
#[tokio::test]
async fn move_to_active_locks_stamps_and_announces_the_job() {
    let ctx = Ctx::new().await;
    let added = ctx.add("email", JobOptions::new()).await;
    ctx.clock.advance(Duration::from_millis(250));
    ctx.take("tok-1").await;

    let id = added.id.as_str();
    let hash = ctx.hash(id);
    assert_eq!(hash["processedOn"], (T0 + 250).to_string());
    assert_eq!(hash["pb"], "w1");
    assert_eq!(hash["ats"], "1");
    assert_eq!(ctx.lock(id).as_deref(), Some("tok-1"));
    let ttl = ctx.pttl(&format!("{id}:lock"));
    assert!(ttl > 0 && ttl <= 30_000, "lock PTTL {ttl}");
    assert_eq!(ctx.list("active"), vec![id.to_owned()]);
    assert!(ctx.list("wait").is_empty());
    ctx.assert_last_move("active", id, "waiting");
}

#[tokio::test]
async fn move_to_active_honours_the_worker_rate_limit() {
    let ctx = Ctx::new().await;
    ctx.add("a", JobOptions::new()).await;
    ctx.add("b", JobOptions::new()).await;
    let limited = one_per_window(fetch("tok"));

    let first = ctx.backend.move_to_active(&limited).await.unwrap();
    assert!(first.job.is_some());
    assert_eq!(ctx.get("limiter").as_deref(), Some("1"));

    let second = ctx.backend.move_to_active(&limited).await.unwrap();
    assert_held_back(&second);
    assert_eq!(ctx.list("wait").len(), 1, "the second job stays waiting");
}

#[tokio::test]
async fn an_unreadable_job_is_taken_with_its_decode_error() {
    let ctx = Ctx::new().await;
    let added = ctx.add("bad", JobOptions::new()).await;
    ctx.cmd::<()>(
        redis::cmd("HSET")
            .arg(ctx.key(added.id.as_str()))
            .arg("data")
            .arg("{not json"),
    );

    let next = ctx.backend.move_to_active(&fetch("tok")).await.unwrap();
    let fetched = next.job.expect("the job is taken all the same");
    assert_eq!(fetched.id, added.id);
    let err = fetched.job.unwrap_err();
    assert_eq!(err.field, "data");
    assert_eq!(err.job_id, added.id.as_str());
    // It is active and locked, so the worker can fail it.
    assert_eq!(ctx.list("active"), vec![added.id.to_string()]);
    assert_eq!(ctx.lock(added.id.as_str()).as_deref(), Some("tok"));
}

#[tokio::test]
async fn move_to_completed_stores_the_return_value_and_emits_completed() {
    let (ctx, job) = Ctx::with_active("sum", JobOptions::new()).await;
    ctx.clock.advance(Duration::from_secs(1));

    let done = finish_ok(&ctx, &job, r#"{"total":3}"#, KeepJobs::KeepAll).await;
    assert_eq!(done.finished_on, T0 + 1000);
    assert_eq!(done.next, None);

    let id = job.id.as_str();
    let hash = ctx.hash(id);
    assert_eq!(hash["returnvalue"], r#"{"total":3}"#);
    assert_eq!(hash["finishedOn"], (T0 + 1000).to_string());
    assert_eq!(hash["atm"], "1");
    assert_eq!(ctx.zset("completed"), vec![(id.to_owned(), T0 + 1000)]);
    assert!(!ctx.has_lock(id));
    assert!(ctx.list("active").is_empty());
    let events = ctx.events();
    let n = events.len();
    assert_eq!(
        events[n - 2],
        entry(&[
            ("event", "completed"),
            ("jobId", id),
            ("returnvalue", r#"{"total":3}"#),
            ("prev", "active"),
        ])
    );
    assert_eq!(events[n - 1], entry(&[("event", "drained")]));
}

#[tokio::test]
async fn move_to_completed_can_take_the_next_job_in_the_same_call() {
    let (ctx, first, second) = Ctx::with_two().await;

    let args = CompleteArgs {
        worker: worker_settings(),
        fetch_next: true,
        ..complete("tok", "null", KeepJobs::KeepAll)
    };
    let done = ctx.backend.move_to_completed(&first, &args).await.unwrap();
    let next = done.next.expect("asked for the next job");
    let fetched = next.job.expect("a second job was waiting");
    assert_eq!(fetched.id, second.id);
    assert_eq!(fetched.job.unwrap().name, "b");

    // Locked with the finished job's token, as upstream does.
    assert_eq!(ctx.lock(second.id.as_str()).as_deref(), Some("tok"));
    assert_eq!(ctx.hash(second.id.as_str())["pb"], "w1");
    assert_eq!(ctx.list("active"), vec![second.id.to_string()]);
    assert_eq!(ctx.hash(first.id.as_str())["returnvalue"], "null");

    // With nothing left, asking again yields an empty answer rather than none.
    let b = ctx
        .backend
        .move_to_completed(&fetched_job(&ctx, &second.id), &args)
        .await
        .unwrap();
    assert_eq!(b.next, Some(bullmq_core::backend::NextJob::default()));
}

fn fetched_job(ctx: &Ctx, id: &JobId) -> bullmq_core::Job {
    let fields = ctx.hash(id.as_str());
    bullmq_core::Job::from_hash(id.as_str(), fields).unwrap()
}

#[tokio::test]
async fn move_to_failed_writes_reason_stacktrace_and_exhausts_retries() {
    let (ctx, job) = Ctx::with_active("risky", JobOptions::new().attempts(1)).await;
    ctx.clock.advance(Duration::from_millis(40));

    let args = finishing::fail_args("tok");
    let done = ctx.backend.move_to_failed(&job, &args).await.unwrap();
    assert_eq!(done.finished_on, T0 + 40);

    let id = job.id.as_str();
    let hash = ctx.hash(id);
    assert_eq!(hash["failedReason"], "boom");
    assert_eq!(
        hash["stacktrace"],
        serde_json::json!([finishing::STACK]).to_string()
    );
    assert_eq!(hash["finishedOn"], (T0 + 40).to_string());
    assert_eq!(hash["atm"], "1");
    assert_eq!(ctx.zset("failed"), vec![(id.to_owned(), T0 + 40)]);
    assert!(!ctx.has_lock(id));
    assert_eq!(
        ctx.events_named("failed"),
        vec![entry(&[
            ("event", "failed"),
            ("jobId", id),
            ("failedReason", "boom"),
            ("prev", "active"),
        ])]
    );
    assert_eq!(
        ctx.events_named("retries-exhausted"),
        vec![entry(&[
            ("event", "retries-exhausted"),
            ("jobId", id),
            ("attemptsMade", "1"),
        ])]
    );
}

#[tokio::test]
async fn finishing_with_the_wrong_token_or_no_lock_is_refused() {
    let (ctx, job) = Ctx::with_active("a", JobOptions::new()).await;

    let err = refused(
        finish(&ctx, &job, "other", "1", KeepJobs::KeepAll).await,
        ScriptErrorCode::LockMismatch,
        "moveToFinished",
    );
    assert_eq!(
        err.to_string(),
        format!(
            "Lock mismatch for job {}. Cmd moveToFinished from active",
            job.id
        )
    );

    ctx.drop_lock(job.id.as_str());
    refused(
        finish(&ctx, &job, "tok", "1", KeepJobs::KeepAll).await,
        ScriptErrorCode::LockNotFound,
        "moveToFinished",
    );
    assert_eq!(ctx.list("active"), vec![job.id.to_string()], "still active");
    assert!(ctx.zset("completed").is_empty());
}

#[tokio::test]
async fn remove_all_retention_deletes_the_finished_job() {
    let (ctx, job) = Ctx::with_active("a", JobOptions::new()).await;

    finish_ok(&ctx, &job, "1", KeepJobs::RemoveAll).await;
    assert!(!ctx.exists(job.id.as_str()), "the job hash is gone");
    assert!(ctx.zset("completed").is_empty());
    assert_eq!(ctx.events_named("completed").len(), 1, "still announced");
}

#[tokio::test]
async fn count_retention_keeps_only_the_newest_jobs() {
    let ctx = Ctx::new().await;
    let a = ctx.add("a", JobOptions::new()).await;
    let b = ctx.add("b", JobOptions::new()).await;
    for job in [&a, &b] {
        ctx.take("tok").await;
        ctx.clock.advance(Duration::from_millis(10));
        finish_ok(&ctx, job, "1", KeepJobs::Number(1)).await;
    }
    assert_eq!(ctx.zset("completed"), vec![(b.id.to_string(), T0 + 20)]);
    assert!(!ctx.exists(a.id.as_str()));
    assert!(ctx.exists(b.id.as_str()));
}

#[tokio::test]
async fn a_job_moved_to_delayed_waits_until_promoted() {
    let (ctx, job) = Ctx::with_active("a", JobOptions::new()).await;
    let id = job.id.as_str();

    let next = ctx
        .backend
        .move_to_delayed(&job.id, &delay_args(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(next, None);
    // The score bakes the due time into the upper bits: due * 4096 (+ a tie-breaker).
    assert_eq!(
        ctx.zset("delayed"),
        vec![(id.to_owned(), (T0 + 5000) * 4096)]
    );
    let hash = ctx.hash(id);
    assert_eq!(hash["delay"], "5000");
    assert_eq!(hash["atm"], "1", "a retry counts as an attempt");
    assert!(!ctx.has_lock(id));
    assert!(ctx.list("active").is_empty());
    assert_eq!(
        ctx.events_named("delayed"),
        vec![entry(&[
            ("event", "delayed"),
            ("jobId", id),
            ("delay", &(T0 + 5000).to_string()),
        ])]
    );

    ctx.backend.promote(&job.id).await.unwrap();
    assert!(ctx.zset("delayed").is_empty());
    assert_eq!(ctx.list("wait"), vec![id.to_owned()]);
    assert_eq!(ctx.hash(id)["delay"], "0");
    ctx.assert_last_move("waiting", id, "delayed");
    // Promoting it again is refused: the conformance suite's
    // `a_delayed_job_reports_its_due_time_and_promotes` checks the refusal and its message.
}

#[tokio::test]
async fn a_deliberate_delay_does_not_count_as_an_attempt_and_can_fetch_next() {
    let (ctx, job, other) = Ctx::with_two().await;

    let next = ctx
        .backend
        .move_to_delayed(
            &job.id,
            &DelayArgs {
                skip_attempt: true,
                worker: worker_settings(),
                fetch_next: true,
                ..delay_args(Duration::from_secs(1))
            },
        )
        .await
        .unwrap()
        .expect("asked for the next job");
    assert_eq!(next.job.unwrap().id, other.id);
    assert!(!ctx.hash(job.id.as_str()).contains_key("atm"));
    assert_eq!(ctx.lock(other.id.as_str()).as_deref(), Some("tok"));
}

#[tokio::test]
async fn a_parent_with_pending_children_waits_for_them() {
    let ctx = Ctx::new().await;
    let parent = ctx.add("parent", JobOptions::new()).await;
    let lonely = ctx.add("lonely", JobOptions::new()).await;
    ctx.take("tok").await;
    ctx.take("tok").await;
    let id = parent.id.as_str();
    let child_key = "bull:children:7";
    ctx.cmd::<()>(
        redis::cmd("SADD")
            .arg(ctx.key(&format!("{id}:dependencies")))
            .arg(child_key),
    );
    ctx.clock.advance(Duration::from_millis(5));

    // A child that is not among its dependencies does not hold it back.
    assert!(!wait_for_children(&ctx, &parent.id, Some("bull:children:8")).await);

    assert!(wait_for_children(&ctx, &parent.id, Some(child_key)).await);
    assert_eq!(ctx.zset("waiting-children"), vec![(id.to_owned(), T0 + 5)]);
    assert!(!ctx.has_lock(id));
    assert_eq!(ctx.list("active"), vec![lonely.id.to_string()]);
    ctx.assert_last_move("waiting-children", id, "active");

    // No dependencies at all: the job stays active.
    assert!(!wait_for_children(&ctx, &lonely.id, None).await);
    assert_eq!(ctx.list("active"), vec![lonely.id.to_string()]);
}

#[tokio::test]
async fn the_stalled_sweep_marks_first_and_moves_on_the_next_run() {
    let (ctx, job) = Ctx::with_active("a", JobOptions::new()).await;
    let id = job.id.as_str();
    // The worker died: its lock expired.
    ctx.drop_lock(id);

    let first = sweep(&ctx, 1).await;
    assert!(first.is_empty());
    assert_eq!(ctx.set("stalled"), vec![id.to_owned()]);
    assert_eq!(ctx.get("stalled-check"), Some(T0.to_string()));
    let ttl = ctx.pttl("stalled-check");
    assert!(ttl > 0 && ttl <= 30_000, "throttle PTTL {ttl}");

    // Within the interval the sweep does nothing.
    let throttled = sweep(&ctx, 1).await;
    assert!(throttled.is_empty());
    assert_eq!(ctx.list("active"), vec![id.to_owned()]);

    ctx.del("stalled-check");
    let second = sweep(&ctx, 1).await;
    assert_eq!(second, vec![job.id.clone()]);
    assert!(ctx.list("active").is_empty());
    assert_eq!(ctx.list("wait"), vec![id.to_owned()]);
    let hash = ctx.hash(id);
    assert_eq!(hash["stc"], "1");
    assert!(!hash.contains_key("defa"), "within maxStalledCount");
    let events = ctx.events();
    let n = events.len();
    assert_eq!(
        events[n - 2],
        entry(&[("event", "waiting"), ("jobId", id), ("prev", "active")])
    );
    assert_eq!(events[n - 1], entry(&[("event", "stalled"), ("jobId", id)]));
}

#[tokio::test]
async fn a_job_stalled_too_often_gets_a_deferred_failure() {
    let (ctx, job) = Ctx::with_active("a", JobOptions::new()).await;
    let id = job.id.as_str();
    ctx.drop_lock(id);

    sweep(&ctx, 0).await;
    ctx.del("stalled-check");
    let moved = sweep(&ctx, 0).await;
    assert_eq!(moved, vec![job.id.clone()]);
    assert_eq!(
        ctx.hash(id)["defa"],
        "job stalled more than allowable limit"
    );
}

#[tokio::test]
async fn a_rate_limited_job_goes_back_to_wait_with_the_limiter_ttl() {
    let (ctx, job, other) = Ctx::with_two().await;
    ctx.cmd::<()>(
        redis::cmd("SET")
            .arg(ctx.key("limiter"))
            .arg(1)
            .arg("PX")
            .arg(5000),
    );

    let ttl = ctx
        .backend
        .move_job_from_active_to_wait(&job.id, Some(&LockToken::new("tok")))
        .await
        .unwrap();
    assert!(
        ttl > Duration::ZERO && ttl <= Duration::from_secs(5),
        "{ttl:?}"
    );
    // Pushed to the consuming end, so it is taken again before the job that waited behind it.
    assert_eq!(
        ctx.list("wait"),
        vec![other.id.to_string(), job.id.to_string()]
    );
    assert!(ctx.list("active").is_empty());
    assert!(!ctx.has_lock(job.id.as_str()));
    ctx.assert_last_move("waiting", job.id.as_str(), "active");

    refused(
        ctx.backend
            .move_job_from_active_to_wait(&JobId::from("nope"), None)
            .await,
        ScriptErrorCode::JobNotFound,
        "moveJobFromActiveToWait",
    );
}

#[tokio::test]
async fn retry_job_requeues_at_once_and_records_the_failure() {
    let (ctx, job) = Ctx::with_active("a", JobOptions::new().attempts(3)).await;
    let id = job.id.as_str();

    let fields = FieldUpdates {
        failed_reason: Some("flaky".to_owned()),
        stacktrace: Some(vec!["Error: flaky".to_owned()]),
        telemetry_metadata: None,
    };
    ctx.backend
        .retry_job(&job.id, false, Some(&LockToken::new("tok")), &fields)
        .await
        .unwrap();
    assert_eq!(ctx.list("wait"), vec![id.to_owned()]);
    assert!(ctx.list("active").is_empty());
    let hash = ctx.hash(id);
    assert_eq!(hash["failedReason"], "flaky");
    assert_eq!(hash["stacktrace"], r#"["Error: flaky"]"#);
    assert_eq!(hash["atm"], "1");
    ctx.assert_last_move("waiting", id, "active");

    refused(
        ctx.backend
            .retry_job(&job.id, false, None, &FieldUpdates::default())
            .await,
        ScriptErrorCode::NotInState,
        "retryJob",
    );
}

#[tokio::test]
async fn reprocess_job_moves_a_finished_job_back_to_wait() {
    let (ctx, job) = Ctx::with_active("a", JobOptions::new()).await;
    finish_ok(&ctx, &job, "42", KeepJobs::KeepAll).await;
    let id = job.id.as_str();

    let err = refused(
        ctx.backend
            .reprocess_job(&job, FinishedState::Failed, ReprocessOptions::default())
            .await,
        ScriptErrorCode::NotInState,
        "reprocessJob",
    );
    assert_eq!(
        err.to_string(),
        format!("Job {id} is not in the failed state. reprocessJob")
    );

    ctx.backend
        .reprocess_job(
            &job,
            FinishedState::Completed,
            ReprocessOptions {
                reset_attempts_made: true,
                reset_attempts_started: false,
            },
        )
        .await
        .unwrap();
    assert!(ctx.zset("completed").is_empty());
    assert_eq!(ctx.list("wait"), vec![id.to_owned()]);
    let hash = ctx.hash(id);
    for gone in ["finishedOn", "processedOn", "returnvalue", "atm"] {
        assert!(!hash.contains_key(gone), "{gone} should be cleared");
    }
    assert_eq!(hash["ats"], "1", "attempts started are kept");
    ctx.assert_last_move("waiting", id, "completed");
}

#[tokio::test]
async fn metrics_are_collected_when_asked_for() {
    let (ctx, job) = Ctx::with_active("a", JobOptions::new()).await;
    let args = CompleteArgs {
        worker: std::sync::Arc::new(bullmq_core::backend::WorkerSettings {
            max_metrics_size: Some(10),
            ..bullmq_core::backend::WorkerSettings::default()
        }),
        ..complete("tok", "1", KeepJobs::KeepAll)
    };
    ctx.backend.move_to_completed(&job, &args).await.unwrap();
    assert_eq!(ctx.hash("metrics:completed")["count"], "1");
}
