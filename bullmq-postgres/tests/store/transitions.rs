//! Only what is PostgreSQL-specific; the shared cases are the conformance suite's `transitions.rs`.
//!
//! `Transitions` and `Locks` of the PostgreSQL backend, end to end on a real server: jobs are
//! added with upstream's own `add_job` command (as Node.js's `addJob` calls it), moved through
//! the trait methods, and the rows read back.

use bullmq_test_support::finishing;
use bullmq_test_support::held::fetch_params;
use std::sync::Arc;
use std::time::Duration;

use crate::support::TestSchema;
use crate::support::jobs::{self, AddJob, refused, state};
use bullmq_core::backend::{
    CompleteArgs, FailArgs, FetchParams, FetchedJob, FieldUpdates, LockToken, Locks, NextJob,
    RateLimiter, ReprocessOptions, StalledCheck, Transitions, WorkerSettings,
};
use bullmq_core::clock::ManualClock;
use bullmq_core::job::FinishedState;
use bullmq_core::options::KeepJobs;
use bullmq_core::{Job, JobId, ScriptErrorCode};
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx;
use bullmq_test_support::retry_later;
use serde_json::{Value, json};

const T0: u64 = 1_700_000_000_000;
const QUEUE: &str = "transitions";

/// A migrated backend on a manual clock stopped at [`T0`].
async fn setup(tag: &str) -> (TestSchema, PostgresBackend, ManualClock) {
    let schema = TestSchema::new(tag);
    let clock = ManualClock::new(T0);
    let backend = schema.backend(QUEUE).await.with_clock(clock.clone());
    (schema, backend, clock)
}

/// [`setup`] with one job, "a", added and taken with token "tok": its id and the job as taken.
async fn one_taken(tag: &str) -> (TestSchema, PostgresBackend, String, Job) {
    let (schema, b, _clock) = setup(tag).await;
    let id = add(&b, "a").await;
    let job = take(&b, "tok").await;
    (schema, b, id, job)
}

/// Adds a job through upstream's `add_job` command with the parameters Node.js's `addJob`
/// passes (auto id, no dedup, FIFO), at [`T0`]; returns its id.
async fn add_with(
    b: &PostgresBackend,
    name: &str,
    data: Value,
    opts: Value,
    parent: Option<(&str, &str)>,
) -> String {
    AddJob {
        name,
        data,
        opts,
        timestamp: i64::try_from(T0).unwrap(),
        parent,
        ..AddJob::new("")
    }
    .add(b)
    .await
}

/// Adds a plain job named `name`.
async fn add(b: &PostgresBackend, name: &str) -> String {
    add_with(b, name, json!({"n": name}), json!({}), None).await
}

/// Asserts the job row `id`'s columns, each read as text (`None` for NULL), in one comparison
/// so a failure shows every column by name.
async fn assert_row(b: &PostgresBackend, id: &str, expected: &[(&str, Option<&str>)]) {
    let mut actual = Vec::new();
    for (column, _) in expected {
        actual.push((*column, text(b, id, column).await));
    }
    let expected: Vec<_> = expected
        .iter()
        .map(|(column, value)| (*column, value.map(str::to_owned)))
        .collect();
    assert_eq!(actual, expected, "job {id}");
}

/// [`T0`] plus `offset` milliseconds, as a bigint column reads as text.
fn at(offset: u64) -> String {
    (T0 + offset).to_string()
}

/// A text column of the job row.
async fn text(b: &PostgresBackend, id: &str, column: &str) -> Option<String> {
    jobs::column(b, id, column).await.expect("read column")
}

fn token(t: &str) -> LockToken {
    LockToken::new(t)
}

fn fetch(t: &str) -> FetchParams {
    fetch_params(t, Duration::from_secs(30), Some("w1"))
}

fn worker() -> Arc<WorkerSettings> {
    Arc::new(WorkerSettings {
        name: Some("w1".to_owned()),
        ..WorkerSettings::default()
    })
}

fn complete(t: &str, keep: KeepJobs, fetch_next: bool) -> CompleteArgs {
    CompleteArgs {
        keep,
        worker: worker(),
        fetch_next,
        ..finishing::complete_args(t, r#"{"ok":true}"#)
    }
}

fn fail(t: &str, keep: KeepJobs, fetch_next: bool) -> FailArgs {
    FailArgs {
        keep,
        worker: worker(),
        fetch_next,
        ..finishing::fail_args(t)
    }
}

/// Takes the next job, which must exist and decode.
async fn take(b: &PostgresBackend, t: &str) -> Job {
    let next = b.move_to_active(&fetch(t)).await.expect("move_to_active");
    decoded(next.job.expect("a job was taken"))
}

/// Advances `clock` by `secs` seconds, then runs the stalled sweep; the ids it moved to wait.
async fn sweep_after(
    b: &PostgresBackend,
    clock: &ManualClock,
    check: &StalledCheck,
    secs: u64,
) -> Vec<JobId> {
    clock.advance(Duration::from_secs(secs));
    b.move_stalled_jobs_to_wait(check)
        .await
        .expect("stalled sweep")
}

/// `job` under an id no row has.
fn missing(job: &Job) -> Job {
    let mut missing = job.clone();
    missing.id = JobId::from("nope");
    missing
}

fn decoded(fetched: FetchedJob) -> Job {
    let job = fetched.job.expect("the job decodes");
    assert_eq!(job.id, fetched.id);
    job
}

#[tokio::test]
async fn takes_and_completes_with_and_without_fetching_the_next_job() {
    let (_schema, b, clock) = setup("tr_complete").await;
    let first = add(&b, "a").await;
    let second = add(&b, "b").await;

    let job = take(&b, "tok").await;
    assert_eq!(job.id.as_str(), first);
    assert_eq!(job.name, "a");
    assert_eq!(job.data, r#"{"n":"a"}"#);
    assert_eq!(job.processed_by.as_deref(), Some("w1"));
    assert_eq!(job.attempts_started, 1);
    assert_eq!(job.processed_on, Some(T0));
    assert_row(
        &b,
        &first,
        &[
            ("state", Some("active")),
            ("locked_until_ms", Some(at(30_000).as_str())),
        ],
    )
    .await;

    clock.advance(Duration::from_millis(5));
    let done = b
        .move_to_completed(&job, &complete("tok", KeepJobs::KeepAll, true))
        .await
        .expect("complete and fetch");
    assert_eq!(done.finished_on, T0 + 5);
    let next = decoded(done.next.expect("fetched").job.expect("the next job"));
    assert_eq!(next.id.as_str(), second);
    assert_eq!(next.processed_by.as_deref(), Some("w1"));
    assert_row(
        &b,
        &first,
        &[
            ("state", Some("completed")),
            ("return_value", Some(r#"{"ok": true}"#)),
            ("finished_at_ms", Some(at(5).as_str())),
            ("attempts_made", Some("1")),
        ],
    )
    .await;
    // The next job is held with the same token, as upstream's fused command locks it.
    assert_row(&b, &second, &[("lock_token", Some("tok"))]).await;

    // Nothing left: the fused command answers no job and no hints.
    let done = b
        .move_to_completed(&next, &complete("tok", KeepJobs::KeepAll, true))
        .await
        .expect("complete the last job");
    assert_eq!(done.next, Some(NextJob::default()));

    // Without fetch_next the plain command runs and nothing is taken.
    let third = add(&b, "c").await;
    let job = take(&b, "tok2").await;
    let done = b
        .move_to_completed(&job, &complete("tok2", KeepJobs::KeepAll, false))
        .await
        .expect("complete without fetching");
    assert_eq!(done.next, None);
    assert_eq!(state(&b, &third).await.as_deref(), Some("completed"));
}

#[tokio::test]
async fn finishing_refusals_carry_upstreams_codes() {
    let (_schema, b, _clock) = setup("tr_refuse").await;
    let id = add(&b, "a").await;
    let job = take(&b, "right").await;

    let err = refused(
        b.move_to_completed(&job, &complete("wrong", KeepJobs::KeepAll, true))
            .await,
        ScriptErrorCode::LockMismatch,
    );
    assert_eq!(err.command, "moveToFinished");
    assert_eq!(err.job_id.as_deref(), Some(id.as_str()));
    // The fused command rolled back as a whole: still active, nothing else taken.
    assert_eq!(state(&b, &id).await.as_deref(), Some("active"));

    refused(
        b.move_to_failed(&job, &fail("wrong", KeepJobs::KeepAll, false))
            .await,
        ScriptErrorCode::LockMismatch,
    );

    b.move_to_completed(&job, &complete("right", KeepJobs::KeepAll, false))
        .await
        .expect("complete");
    let err = refused(
        b.move_to_completed(&job, &complete("right", KeepJobs::KeepAll, false))
            .await,
        ScriptErrorCode::NotInState,
    );
    assert_eq!(err.state.as_deref(), Some("active"));

    let missing = missing(&job);
    refused(
        b.move_to_failed(&missing, &fail("right", KeepJobs::KeepAll, true))
            .await,
        ScriptErrorCode::JobNotFound,
    );
}

#[tokio::test]
async fn fails_with_reason_and_stacktrace_and_fetches_the_next() {
    let (_schema, b, _clock) = setup("tr_fail").await;
    let first = add(&b, "a").await;
    let second = add(&b, "b").await;
    let job = take(&b, "tok").await;

    let done = b
        .move_to_failed(&job, &fail("tok", KeepJobs::KeepAll, true))
        .await
        .expect("fail and fetch");
    assert_eq!(done.finished_on, T0);
    let next = decoded(done.next.unwrap().job.unwrap());
    assert_eq!(next.id.as_str(), second);
    let stack = json!([finishing::STACK]).to_string();
    assert_row(
        &b,
        &first,
        &[
            ("state", Some("failed")),
            ("failed_reason", Some("boom")),
            ("stacktrace", Some(stack.as_str())),
            ("attempts_made", Some("1")),
        ],
    )
    .await;

    // The plain command, with no stack trace to write.
    let mut args = fail("tok", KeepJobs::KeepAll, false);
    args.fields = FieldUpdates::default();
    args.failed_reason = "again".to_owned();
    let done = b.move_to_failed(&next, &args).await.expect("fail");
    assert_eq!(done.next, None);
    assert_row(
        &b,
        &second,
        &[("failed_reason", Some("again")), ("stacktrace", None)],
    )
    .await;
}

#[tokio::test]
async fn metrics_are_collected_only_when_the_worker_keeps_them() {
    let (_schema, b, clock) = setup("tr_metrics").await;
    let count = |kind: &'static str| {
        let b = b.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count FROM metrics WHERE queue = $1 AND kind = $2")
                .bind(QUEUE)
                .bind(kind)
                .fetch_optional(b.connection().pool())
                .await
                .expect("read metrics")
        }
    };
    add(&b, "a").await;
    let job = take(&b, "tok").await;
    b.move_to_completed(&job, &complete("tok", KeepJobs::KeepAll, false))
        .await
        .unwrap();
    assert_eq!(count("completed").await, None);

    let metered = Arc::new(WorkerSettings {
        max_metrics_size: Some(10),
        ..WorkerSettings::default()
    });
    for fetch_next in [false, true] {
        add(&b, "b").await;
        clock.advance(Duration::from_secs(61));
        let job = take(&b, "tok").await;
        let mut args = complete("tok", KeepJobs::KeepAll, fetch_next);
        args.worker = Arc::clone(&metered);
        b.move_to_completed(&job, &args).await.unwrap();
    }
    assert_eq!(count("completed").await, Some(2));

    add(&b, "c").await;
    let job = take(&b, "tok").await;
    let mut args = fail("tok", KeepJobs::KeepAll, false);
    args.worker = metered;
    b.move_to_failed(&job, &args).await.unwrap();
    assert_eq!(count("failed").await, Some(1));
}

/// The delay, its due time and the promotion are the conformance suite's
/// `a_delayed_job_reports_its_due_time_and_promotes`; here, the row a delay writes and
/// PostgreSQL's own refusals.
#[tokio::test]
async fn a_delayed_job_s_row_and_refusals() {
    let (_schema, b, id, job) = one_taken("tr_delay").await;

    let args = retry_later(T0, Duration::from_secs(60), "tok", worker(), false);
    assert_eq!(b.move_to_delayed(&job.id, &args).await.unwrap(), None);
    assert_row(
        &b,
        &id,
        &[
            ("state", Some("delayed")),
            ("process_at_ms", Some(at(60_000).as_str())),
            ("attempts_made", Some("1")),
            ("failed_reason", Some("retry later")),
        ],
    )
    .await;
    // Delaying it again: not in state here (lock-not-found on Redis).
    let err = refused(
        b.move_to_delayed(&job.id, &args).await,
        ScriptErrorCode::NotInState,
    );
    assert_eq!(err.command, "moveToDelayed");

    b.promote(&job.id).await.expect("promote");
    let err = refused(b.promote(&job.id).await, ScriptErrorCode::NotInState);
    assert_eq!(err.command, "promote");
    assert_eq!(err.state.as_deref(), Some("delayed"));
    refused(
        b.promote(&JobId::from("nope")).await,
        ScriptErrorCode::JobNotFound,
    );
}

#[tokio::test]
async fn a_rate_limited_queue_reports_the_ttl() {
    let (_schema, b, clock) = setup("tr_limit").await;
    let first = add(&b, "a").await;
    let second = add(&b, "b").await;
    let limited = FetchParams {
        limiter: Some(RateLimiter {
            max: 1,
            duration: Duration::from_secs(10),
        }),
        ..fetch("tok")
    };
    let job = decoded(b.move_to_active(&limited).await.unwrap().job.unwrap());
    assert_eq!(job.id.as_str(), first);

    clock.advance(Duration::from_secs(4));
    let next = b.move_to_active(&limited).await.unwrap();
    assert!(next.job.is_none());
    assert_eq!(next.rate_limit_ttl, Some(Duration::from_secs(6)));
    assert_eq!(next.next_delayed_at, None);

    // Moving the active job back to wait answers the limiter's remaining window.
    let ttl = b
        .move_job_from_active_to_wait(&job.id, Some(&token("tok")))
        .await
        .unwrap();
    assert_eq!(ttl, Duration::from_secs(6));
    assert_eq!(state(&b, &first).await.as_deref(), Some("waiting"));

    // Once the window has passed the next job is taken; the one moved back queued behind it.
    clock.advance(Duration::from_secs(6));
    let job = decoded(b.move_to_active(&limited).await.unwrap().job.unwrap());
    assert_eq!(job.id.as_str(), second);
    assert_eq!(state(&b, &first).await.as_deref(), Some("waiting"));
}

#[tokio::test]
async fn moves_an_active_job_back_to_wait() {
    let (_schema, b, id, job) = one_taken("tr_back").await;

    // Another token leaves the job where it is; the answer is still the limiter's window.
    let ttl = b
        .move_job_from_active_to_wait(&job.id, Some(&token("other")))
        .await
        .unwrap();
    assert_eq!(ttl, Duration::ZERO);
    assert_eq!(state(&b, &id).await.as_deref(), Some("active"));

    let ttl = b
        .move_job_from_active_to_wait(&job.id, Some(&token("tok")))
        .await
        .unwrap();
    assert_eq!(ttl, Duration::ZERO);
    assert_row(&b, &id, &[("state", Some("waiting")), ("lock_token", None)]).await;
    let again = take(&b, "tok2").await;
    assert_eq!(again.id.as_str(), id);
    assert_eq!(again.attempts_started, 2);

    // No token ('0') skips the lock check.
    b.move_job_from_active_to_wait(&again.id, None)
        .await
        .unwrap();
    assert_eq!(state(&b, &id).await.as_deref(), Some("waiting"));

    let err = refused(
        b.move_job_from_active_to_wait(&JobId::from("nope"), None)
            .await,
        ScriptErrorCode::JobNotFound,
    );
    assert_eq!(err.command, "moveJobFromActiveToWait");
}

#[tokio::test]
async fn stalled_jobs_are_reclaimed_on_the_second_pass() {
    let (_schema, b, clock) = setup("tr_stalled").await;
    let id = add(&b, "a").await;
    let short = FetchParams {
        lock_duration: Duration::from_millis(100),
        ..fetch("tok")
    };
    b.move_to_active(&short).await.unwrap().job.unwrap();
    let check = StalledCheck {
        max_stalled_count: 1,
        stalled_interval: Duration::from_secs(30),
    };

    // First pass marks the active job; the lock has expired but it is not reclaimed yet.
    assert!(sweep_after(&b, &clock, &check, 1).await.is_empty());
    // Within the interval the sweep does not run at all.
    assert!(sweep_after(&b, &clock, &check, 10).await.is_empty());
    assert_eq!(state(&b, &id).await.as_deref(), Some("active"));

    let reclaimed = sweep_after(&b, &clock, &check, 30).await;
    assert_eq!(reclaimed, vec![JobId::from(id.as_str())]);
    assert_row(
        &b,
        &id,
        &[
            ("state", Some("waiting")),
            ("stalled_count", Some("1")),
            ("deferred_failure", None),
        ],
    )
    .await;

    // Stalled once more than allowed: the next worker gets a deferred failure to apply.
    let job = decoded(b.move_to_active(&short).await.unwrap().job.unwrap());
    assert_eq!(job.stalled_counter, 1);
    assert!(sweep_after(&b, &clock, &check, 31).await.is_empty());
    assert_eq!(sweep_after(&b, &clock, &check, 31).await.len(), 1);
    let job = take(&b, "tok").await;
    assert_eq!(job.stalled_counter, 2);
    assert_eq!(
        job.deferred_failure.as_deref(),
        Some("job stalled more than allowable limit")
    );
}

#[tokio::test]
async fn locks_extend_only_with_the_holding_token() {
    let (_schema, b, clock) = setup("tr_locks").await;
    let first = add(&b, "a").await;
    let second = add(&b, "b").await;
    let job_a = take(&b, "ta").await;
    let job_b = take(&b, "tb").await;

    clock.advance(Duration::from_secs(10));
    assert!(
        b.extend_lock(&job_a.id, &token("ta"), Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert_row(
        &b,
        &first,
        &[("locked_until_ms", Some(at(70_000).as_str()))],
    )
    .await;
    assert!(
        !b.extend_lock(&job_a.id, &token("tb"), Duration::from_secs(60))
            .await
            .unwrap()
    );
    assert!(
        !b.extend_lock(&JobId::from("nope"), &token("ta"), Duration::from_secs(60))
            .await
            .unwrap()
    );

    let lost = b
        .extend_locks(
            &[
                (job_a.id.clone(), token("ta")),
                (job_b.id.clone(), token("wrong")),
                (JobId::from("nope"), token("x")),
            ],
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(
        lost,
        vec![JobId::from(second.as_str()), JobId::from("nope")]
    );
    assert_row(
        &b,
        &first,
        &[("locked_until_ms", Some(at(15_000).as_str()))],
    )
    .await;
    assert!(
        b.extend_locks(&[], Duration::from_secs(5))
            .await
            .unwrap()
            .is_empty()
    );

    // A worker whose lock went elsewhere cannot finish the job (upstream's -6).
    let err = refused(
        b.move_to_completed(&job_b, &complete("wrong", KeepJobs::KeepAll, false))
            .await,
        ScriptErrorCode::LockMismatch,
    );
    assert_eq!(err.state.as_deref(), Some("active"));
}

#[tokio::test]
async fn retries_an_active_job_at_once() {
    let (_schema, b, id, job) = one_taken("tr_retry").await;
    let fields = FieldUpdates {
        failed_reason: Some("flaky".to_owned()),
        stacktrace: Some(vec!["Error: flaky".to_owned()]),
        telemetry_metadata: None,
    };

    let err = refused(
        b.retry_job(&job.id, false, Some(&token("wrong")), &fields)
            .await,
        ScriptErrorCode::LockMismatch,
    );
    assert_eq!(err.command, "retryJob");

    b.retry_job(&job.id, false, Some(&token("tok")), &fields)
        .await
        .expect("retry");
    assert_row(
        &b,
        &id,
        &[
            ("state", Some("waiting")),
            ("attempts_made", Some("1")),
            ("failed_reason", Some("flaky")),
            ("stacktrace", Some(r#"["Error: flaky"]"#)),
        ],
    )
    .await;

    refused(
        b.retry_job(&job.id, false, Some(&token("tok")), &fields)
            .await,
        ScriptErrorCode::NotInState,
    );
    assert_eq!(take(&b, "tok").await.id.as_str(), id);
}

#[tokio::test]
async fn reprocesses_a_finished_job() {
    let (_schema, b, id, job) = one_taken("tr_reprocess").await;
    b.move_to_completed(&job, &complete("tok", KeepJobs::KeepAll, false))
        .await
        .unwrap();

    let err = refused(
        b.reprocess_job(&job, FinishedState::Failed, ReprocessOptions::default())
            .await,
        ScriptErrorCode::NotInState,
    );
    assert_eq!(err.command, "reprocessJob");
    assert_eq!(err.state.as_deref(), Some("failed"));

    let reset = ReprocessOptions {
        reset_attempts_made: true,
        reset_attempts_started: false,
    };
    b.reprocess_job(&job, FinishedState::Completed, reset)
        .await
        .expect("reprocess");
    assert_row(
        &b,
        &id,
        &[
            ("state", Some("waiting")),
            ("attempts_made", Some("0")),
            ("attempts_started", Some("1")),
            ("finished_at_ms", None),
            ("return_value", None),
        ],
    )
    .await;

    let missing = missing(&job);
    refused(
        b.reprocess_job(&missing, FinishedState::Completed, reset)
            .await,
        ScriptErrorCode::JobNotFound,
    );
}

#[tokio::test]
async fn a_job_with_unreadable_options_is_taken_with_the_decoding_error() {
    let (_schema, b, _clock) = setup("tr_corrupt").await;
    let id = add_with(&b, "bad", json!({}), json!("not an object"), None).await;

    let next = b.move_to_active(&fetch("tok")).await.unwrap();
    let fetched = next.job.expect("the row is taken");
    assert_eq!(fetched.id.as_str(), id);
    let err = fetched.job.expect_err("the options do not decode");
    assert_eq!(err.job_id, id);
    assert_eq!(err.field, "opts");
    assert_eq!(state(&b, &id).await.as_deref(), Some("active"));

    // The worker can still fail it by id with the reason.
    let mut job = Job::new(
        "bad",
        "{}".to_owned(),
        bullmq_core::JobOptions::default(),
        T0,
    );
    job.id = fetched.id;
    b.move_to_failed(&job, &fail("tok", KeepJobs::KeepAll, false))
        .await
        .expect("fail the unreadable job");
    assert_eq!(state(&b, &id).await.as_deref(), Some("failed"));
}
