//! `Transitions`: taking, finishing, delaying, retrying and releasing jobs, each move read back
//! through `Queries`.

use std::sync::Arc;
use std::time::Duration;

use bullmq_core::backend::Lifecycle;
use bullmq_core::backend::{
    DelayArgs, FieldUpdates, NextJob, Queries, ReprocessOptions, Transitions, WorkerSettings,
};
use bullmq_core::job::FinishedState;
use bullmq_core::options::{KeepJobs, ParentOptions};
use bullmq_core::{JobOptions, JobState, ScriptErrorCode};

use super::{LOCK, Sec, T0, complete_args, fail_args, fetch, id, refused, script, token, worker};
use crate::store::Store;
use crate::support::held::{assert_held_back, one_per_window};
use crate::support::retry_later;

pub async fn take_stamps_and_announces_the_job<S: Store>() {
    let s = Sec::<S>::new().await;
    let added = s.add("email", JobOptions::new()).await;
    s.clock.advance(Duration::from_millis(250));

    let next = s.b.move_to_active(&fetch("tok")).await.unwrap();
    assert_eq!(next.rate_limit_ttl, None);
    assert_eq!(next.next_delayed_at, None);
    let fetched = next.job.unwrap();
    assert_eq!(fetched.id, added.id);
    let job = fetched.job.unwrap();
    assert_eq!(job.name, "email");
    assert_eq!(job.data, "{}");
    assert_eq!(job.processed_on, Some(T0 + 250));
    assert_eq!(job.processed_by.as_deref(), Some("w1"));
    assert_eq!(job.attempts_started, 1);
    assert_eq!(job.attempts_made, 0);
    assert_eq!(s.state(&added.id).await, Some(JobState::Active));
    // Held by this token only.
    assert!(s.extends(&added.id, "tok", LOCK).await);
    assert!(!s.extends(&added.id, "other", LOCK).await);
    s.only_event("active", &added.id, "waiting").await;
}

pub async fn nothing_ready_reports_the_next_delayed_job<S: Store>() {
    let s = Sec::<S>::new().await;
    let next = s.b.move_to_active(&fetch("tok")).await.unwrap();
    assert_eq!(next, NextJob::default(), "an empty queue");

    s.add("later", JobOptions::new().delay(Duration::from_secs(5)))
        .await;
    let next = s.b.move_to_active(&fetch("tok")).await.unwrap();
    assert!(next.job.is_none());
    assert_eq!(next.rate_limit_ttl, None);
    assert_eq!(next.next_delayed_at, Some(T0 + 5000));
}

pub async fn a_worker_rate_limit_holds_the_next_job<S: Store>() {
    let s = Sec::<S>::new().await;
    let first = s.add("a", JobOptions::new()).await;
    let second = s.add("b", JobOptions::new()).await;
    let limited = one_per_window(fetch("tok"));

    let taken = s.b.move_to_active(&limited).await.unwrap();
    assert_eq!(taken.job.unwrap().id, first.id);
    let held = s.b.move_to_active(&limited).await.unwrap();
    assert_held_back(&held);
    assert_eq!(s.state(&second.id).await, Some(JobState::Waiting));
    assert!(s.b.get_rate_limit_ttl(Some(1)).await.unwrap() > Duration::ZERO);
}

pub async fn complete_stores_the_value_and_can_take_the_next<S: Store>() {
    let s = Sec::<S>::new().await;
    let first = s.add("a", JobOptions::new()).await;
    let second = s.add("b", JobOptions::new()).await;
    let job = s.take("tok").await;
    s.clock.advance(Duration::from_secs(1));

    let done =
        s.b.move_to_completed(
            &job,
            &complete_args("tok", r#"{"total":3}"#, KeepJobs::KeepAll, true),
        )
        .await
        .unwrap();
    assert_eq!(done.finished_on, T0 + 1000);
    let next = done.next.expect("asked for the next job").job.unwrap();
    assert_eq!(next.id, second.id);
    let next = next.job.unwrap();
    assert_eq!(next.name, "b");
    assert_eq!(next.processed_by.as_deref(), Some("w1"));
    // The next job is held with the finished job's token, as upstream's fused move locks it.
    assert!(s.extends(&second.id, "tok", LOCK).await);

    let stored = s.job(&first.id).await;
    assert_eq!(s.state(&first.id).await, Some(JobState::Completed));
    assert_eq!(stored.return_value.as_deref(), Some(r#"{"total":3}"#));
    assert_eq!(stored.finished_on, Some(T0 + 1000));
    assert_eq!(stored.attempts_made, 1);
    // (The value's text in the event is the store's: JSON text on Redis, jsonb's on PostgreSQL.)
    s.only_event("completed", &first.id, "active").await;

    // Nothing left: asking again answers an empty next job rather than none.
    let done =
        s.b.move_to_completed(
            &next,
            &complete_args("tok", "null", KeepJobs::KeepAll, true),
        )
        .await
        .unwrap();
    assert_eq!(done.next, Some(NextJob::default()));
    assert_eq!(
        s.job(&second.id).await.return_value.as_deref(),
        Some("null")
    );

    // Without fetch_next nothing is taken.
    let third = s.add("c", JobOptions::new()).await;
    let job = s.take("tok2").await;
    let done =
        s.b.move_to_completed(&job, &complete_args("tok2", "1", KeepJobs::KeepAll, false))
            .await
            .unwrap();
    assert_eq!(done.next, None);
    assert_eq!(s.state(&third.id).await, Some(JobState::Completed));
}

pub async fn finishing_needs_the_holding_token<S: Store>() {
    let s = Sec::<S>::new().await;
    let added = s.add("a", JobOptions::new()).await;
    let job = s.take("right").await;

    for fetch_next in [false, true] {
        let err = refused(
            s.b.move_to_completed(
                &job,
                &complete_args("wrong", "1", KeepJobs::KeepAll, fetch_next),
            )
            .await,
            ScriptErrorCode::LockMismatch,
            "moveToFinished",
        );
        assert_eq!(err.job_id.as_deref(), Some(added.id.as_str()));
        assert_eq!(
            err.to_string(),
            format!(
                "Lock mismatch for job {}. Cmd moveToFinished from active",
                added.id
            )
        );
    }
    let err = script(
        s.b.move_to_failed(&job, &fail_args("wrong", KeepJobs::KeepAll, false))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, ScriptErrorCode::LockMismatch);
    // Refused as a whole: still active, nothing finished.
    assert_eq!(s.state(&added.id).await, Some(JobState::Active));
    assert!(s.job(&added.id).await.finished_on.is_none());

    let mut missing = job.clone();
    missing.id = id("nope");
    let err = script(
        s.b.move_to_failed(&missing, &fail_args("right", KeepJobs::KeepAll, true))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, ScriptErrorCode::JobNotFound);
}

pub async fn fail_stores_reason_and_stacktrace_and_can_take_the_next<S: Store>() {
    let s = Sec::<S>::new().await;
    let first = s.add("risky", JobOptions::new().attempts(1)).await;
    let second = s.add("b", JobOptions::new()).await;
    let job = s.take("tok").await;
    s.clock.advance(Duration::from_millis(40));

    let done =
        s.b.move_to_failed(&job, &fail_args("tok", KeepJobs::KeepAll, true))
            .await
            .unwrap();
    assert_eq!(done.finished_on, T0 + 40);
    let next = done.next.unwrap().job.unwrap().job.unwrap();
    assert_eq!(next.id, second.id);

    let stored = s.job(&first.id).await;
    assert_eq!(s.state(&first.id).await, Some(JobState::Failed));
    assert_eq!(stored.failed_reason.as_deref(), Some("boom"));
    assert_eq!(stored.stacktrace, ["Error: boom\n    at run (x.js:1:1)"]);
    assert_eq!(stored.finished_on, Some(T0 + 40));
    assert_eq!(stored.attempts_made, 1);
    let failed = s.only_event("failed", &first.id, "active").await;
    assert_eq!(failed["failedReason"], "boom");

    // The plain move, with no stack trace to write.
    let mut args = fail_args("tok", KeepJobs::KeepAll, false);
    args.fields = FieldUpdates::default();
    args.failed_reason = "again".to_owned();
    let done = s.b.move_to_failed(&next, &args).await.unwrap();
    assert_eq!(done.next, None);
    let stored = s.job(&second.id).await;
    assert_eq!(stored.failed_reason.as_deref(), Some("again"));
    assert!(stored.stacktrace.is_empty());
}

pub async fn retention_removes_all_or_keeps_the_newest<S: Store>() {
    let s = Sec::<S>::new().await;
    let gone = s.a_completed("1", KeepJobs::RemoveAll).await;
    assert_eq!(s.state(&gone.id).await, None);
    assert!(s.b.get_job(&gone.id).await.unwrap().is_none());
    assert_eq!(
        s.events_named("completed").await.len(),
        1,
        "still announced"
    );

    let mut ids = Vec::new();
    for name in ["b", "c", "d"] {
        ids.push(s.add(name, JobOptions::new()).await.id);
    }
    for _ in 0..3 {
        s.clock.advance(Duration::from_millis(10));
        let job = s.take("tok").await;
        s.b.move_to_failed(&job, &fail_args("tok", KeepJobs::Number(2), false))
            .await
            .unwrap();
    }
    assert_eq!(s.state(&ids[0]).await, None);
    assert_eq!(s.state(&ids[1]).await, Some(JobState::Failed));
    assert_eq!(s.state(&ids[2]).await, Some(JobState::Failed));
}

pub async fn metrics_are_collected_only_when_the_worker_keeps_them<S: Store>() {
    let s = Sec::<S>::new().await;
    s.a_completed("1", KeepJobs::KeepAll).await;
    let b = &s.b;
    let total = |state| async move { b.get_metrics(state, 0, -1).await.unwrap().total };
    assert_eq!(total(FinishedState::Completed).await, 0);

    let metered = Arc::new(WorkerSettings {
        max_metrics_size: Some(10),
        ..WorkerSettings::default()
    });
    for fetch_next in [false, true] {
        s.add("b", JobOptions::new()).await;
        let job = s.take("tok").await;
        let mut args = complete_args("tok", "1", KeepJobs::KeepAll, fetch_next);
        args.worker = Arc::clone(&metered);
        s.b.move_to_completed(&job, &args).await.unwrap();
    }
    assert_eq!(total(FinishedState::Completed).await, 2);

    s.add("c", JobOptions::new()).await;
    let job = s.take("tok").await;
    let mut args = fail_args("tok", KeepJobs::KeepAll, false);
    args.worker = metered;
    s.b.move_to_failed(&job, &args).await.unwrap();
    assert_eq!(total(FinishedState::Failed).await, 1);
}

pub async fn a_delayed_job_reports_its_due_time_and_promotes<S: Store>() {
    let s = Sec::<S>::new().await;
    let added = s.add("a", JobOptions::new()).await;
    let later = s.add("b", JobOptions::new()).await;
    let job = s.take("tok").await;

    let args = retry_later(T0, Duration::from_secs(60), "tok", worker(), true);
    let next =
        s.b.move_to_delayed(&job.id, &args)
            .await
            .unwrap()
            .expect("fetch_next answers");
    assert_eq!(next.job.unwrap().id, later.id);
    assert_eq!(s.state(&added.id).await, Some(JobState::Delayed));
    let stored = s.job(&added.id).await;
    assert_eq!(stored.attempts_made, 1, "a retry counts as an attempt");
    assert_eq!(stored.failed_reason.as_deref(), Some("retry later"));
    let delayed = s.events_named("delayed").await;
    assert_eq!(delayed.len(), 1);
    assert_eq!(delayed[0]["jobId"], added.id.as_str());
    assert_eq!(delayed[0]["delay"], (T0 + 60_000).to_string());
    // Its lock went with it.
    assert!(!s.extends(&added.id, "tok", LOCK).await);

    // Nothing ready: the worker learns when the delayed job is due.
    let idle = s.b.move_to_active(&fetch("tok")).await.unwrap();
    assert!(idle.job.is_none());
    assert_eq!(idle.next_delayed_at, Some(T0 + 60_000));

    s.b.promote(&added.id).await.unwrap();
    assert_eq!(s.state(&added.id).await, Some(JobState::Waiting));
    assert_eq!(s.job(&added.id).await.delay, Duration::ZERO);
    let err = refused(
        s.b.promote(&added.id).await,
        ScriptErrorCode::NotInState,
        "promote",
    );
    assert_eq!(
        err.to_string(),
        format!("Job {} is not in the delayed state. promote", added.id)
    );

    // A processor's own delay (skip_attempt) is no attempt; the clock then makes it due.
    let job = s.take("tok").await;
    assert_eq!(job.id, added.id);
    let args = DelayArgs {
        skip_attempt: true,
        fields: FieldUpdates::default(),
        fetch_next: false,
        delay: Duration::from_secs(5),
        ..args
    };
    assert_eq!(s.b.move_to_delayed(&job.id, &args).await.unwrap(), None);
    assert_eq!(s.job(&added.id).await.attempts_made, 1);
    // (Delaying it again is refused on both stores, as lock-not-found on Redis and
    // not-in-state on PostgreSQL, each pinned beside its store.)
    assert!(s.b.move_to_delayed(&job.id, &args).await.is_err());
    s.clock.advance(Duration::from_secs(5));
    assert_eq!(s.take("tok").await.id, added.id);
}

pub async fn back_to_wait_answers_the_rate_limit_window<S: Store>() {
    use bullmq_core::backend::Admin;
    let s = Sec::<S>::new().await;
    let added = s.add("a", JobOptions::new()).await;
    let job = s.take("tok").await;

    // No window: zero.
    s.add("b", JobOptions::new()).await;
    let second = s.take("tok2").await;
    let ttl =
        s.b.move_job_from_active_to_wait(&second.id, Some(&token("tok2")))
            .await
            .unwrap();
    assert_eq!(ttl, Duration::ZERO);
    assert_eq!(s.state(&second.id).await, Some(JobState::Waiting));

    s.b.set_rate_limit(Duration::from_secs(5)).await.unwrap();
    let ttl =
        s.b.move_job_from_active_to_wait(&job.id, Some(&token("tok")))
            .await
            .unwrap();
    assert!(
        ttl > Duration::ZERO && ttl <= Duration::from_secs(5),
        "{ttl:?}"
    );
    assert_eq!(s.state(&added.id).await, Some(JobState::Waiting));
    assert!(!s.extends(&added.id, "tok", LOCK).await);
    let waiting = s.events_named("waiting").await;
    let last = waiting.last().unwrap();
    assert_eq!(last["jobId"], added.id.as_str());
    assert_eq!(last["prev"], "active");

    refused(
        s.b.move_job_from_active_to_wait(&id("nope"), None).await,
        ScriptErrorCode::JobNotFound,
        "moveJobFromActiveToWait",
    );
}

pub async fn retry_requeues_at_once_with_the_failure<S: Store>() {
    let s = Sec::<S>::new().await;
    let added = s.add("a", JobOptions::new().attempts(3)).await;
    let job = s.take("tok").await;
    let fields = FieldUpdates {
        failed_reason: Some("flaky".to_owned()),
        stacktrace: Some(vec!["Error: flaky".to_owned()]),
        telemetry_metadata: None,
    };

    refused(
        s.b.retry_job(&job.id, false, Some(&token("wrong")), &fields)
            .await,
        ScriptErrorCode::LockMismatch,
        "retryJob",
    );

    s.b.retry_job(&job.id, false, Some(&token("tok")), &fields)
        .await
        .unwrap();
    assert_eq!(s.state(&added.id).await, Some(JobState::Waiting));
    let stored = s.job(&added.id).await;
    assert_eq!(stored.attempts_made, 1);
    assert_eq!(stored.failed_reason.as_deref(), Some("flaky"));
    assert_eq!(stored.stacktrace, ["Error: flaky"]);
    let waiting = s.events_named("waiting").await;
    let last = waiting.last().unwrap();
    assert_eq!(last["jobId"], added.id.as_str());
    assert_eq!(last["prev"], "active");

    refused(
        s.b.retry_job(&job.id, false, None, &FieldUpdates::default())
            .await,
        ScriptErrorCode::NotInState,
        "retryJob",
    );
    assert_eq!(s.take("tok").await.id, added.id);
}

pub async fn reprocess_moves_a_finished_job_back_to_wait<S: Store>() {
    let s = Sec::<S>::new().await;
    let job = s.a_completed("42", KeepJobs::KeepAll).await;

    let err = refused(
        s.b.reprocess_job(&job, FinishedState::Failed, ReprocessOptions::default())
            .await,
        ScriptErrorCode::NotInState,
        "reprocessJob",
    );
    assert_eq!(err.state.as_deref(), Some("failed"));
    assert_eq!(
        err.to_string(),
        format!("Job {} is not in the failed state. reprocessJob", job.id)
    );

    let reset = ReprocessOptions {
        reset_attempts_made: true,
        reset_attempts_started: false,
    };
    s.b.reprocess_job(&job, FinishedState::Completed, reset)
        .await
        .unwrap();
    assert_eq!(s.state(&job.id).await, Some(JobState::Waiting));
    let stored = s.job(&job.id).await;
    assert_eq!(stored.attempts_made, 0);
    assert_eq!(stored.attempts_started, 1, "attempts started are kept");
    assert_eq!(stored.finished_on, None);
    assert_eq!(stored.processed_on, None);
    assert_eq!(stored.return_value, None);
    let waiting = s.events_named("waiting").await;
    let last = waiting.last().unwrap();
    assert_eq!(last["jobId"], job.id.as_str());
    assert_eq!(last["prev"], "completed");

    let mut missing = job.clone();
    missing.id = id("nope");
    let err = script(
        s.b.reprocess_job(&missing, FinishedState::Completed, reset)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, ScriptErrorCode::JobNotFound);
}

pub async fn a_parent_with_pending_children_waits_for_them<S: Store>() {
    let s = Sec::<S>::new().await;
    let lone = s.add("lone", JobOptions::new()).await;
    let job = s.take("tok").await;
    assert_eq!(job.id, lone.id);
    // No dependencies at all: the job stays active.
    assert!(
        !s.b.move_to_waiting_children(&job.id, &token("tok"), None)
            .await
            .unwrap()
    );
    assert_eq!(s.state(&lone.id).await, Some(JobState::Active));

    let parent = s.add("parent", JobOptions::new()).await;
    let parent_job = s.take("tp").await;
    assert_eq!(parent_job.id, parent.id);
    let kids = s.sibling("kids").await;
    let parent_of = ParentOptions::new(parent.id.as_str(), s.b.qualified_name());
    let child = kids
        .add(
            "child",
            &serde_json::json!({}),
            JobOptions::new().parent(parent_of),
        )
        .await
        .unwrap();
    let child_key = kids.backend().to_key(child.id.as_str());
    s.clock.advance(Duration::from_millis(5));

    refused(
        s.b.move_to_waiting_children(&parent_job.id, &token("wrong"), None)
            .await,
        ScriptErrorCode::LockMismatch,
        "moveToWaitingChildren",
    );
    assert!(
        s.b.move_to_waiting_children(&parent_job.id, &token("tp"), Some(&child_key))
            .await
            .unwrap()
    );
    assert_eq!(s.state(&parent.id).await, Some(JobState::WaitingChildren));
    assert!(!s.extends(&parent.id, "tp", LOCK).await);

    let err = script(
        s.b.move_to_waiting_children(&id("nope"), &token("tp"), None)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, ScriptErrorCode::JobNotFound);
}
