//! `JobRef` (Node.js BullMQ's `Job` methods) on Redis: what each method writes, read back
//! from the job hash, the state sets, the lock and the event stream as Node.js lays them out.
//! The behaviour every store shares is in the conformance suite (`job_api`).

use crate::support;
use crate::support::failing::{assert_retried_later, fail_attempt, fatal, retried_later};
use crate::support::held::fetch_params;
use crate::support::redis_queue::RedisQueue;

use std::collections::BTreeMap;
use std::time::Duration;

use crate::support::{script_code, token};
use bullmq::backend::{ReprocessOptions, Transitions};
use bullmq::clock::ManualClock;
use bullmq::job::FinishedState;
use bullmq::redis::RedisBackend;
use bullmq::{FailOutcome, JobFailure, ScriptErrorCode};
use bullmq::{Job, JobId, JobOptions, JobRef, JobState, ParentOptions};
use serde_json::json;

const NOW: u64 = 1_700_000_000_000;

/// A queue on the shared server whose producer reads the time from `clock`.
struct Env {
    rq: RedisQueue,
    clock: ManualClock,
}

async fn env(name: &str) -> Env {
    let clock = ManualClock::new(NOW);
    Env {
        rq: RedisQueue::shared_on_clock(name, clock.clone()).await,
        clock,
    }
}

impl Env {
    /// The queue's key, `<prefix>:<name>`.
    fn base(&self) -> String {
        format!("{}:{}", self.rq.prefix, self.rq.name.as_str())
    }

    fn key(&self, part: &str) -> String {
        format!("{}:{part}", self.base())
    }

    async fn add(&self, id: &str, opts: JobOptions) -> Job {
        self.rq
            .queue
            .add("job", &json!({"n": id}), opts.job_id(id))
            .await
            .expect("add")
    }

    /// Takes the next job with `token`, as a worker would.
    async fn take(&self, token: &str) -> JobId {
        let fetch = fetch_params(token, Duration::from_secs(30), None);
        let next = self
            .rq
            .queue
            .backend()
            .move_to_active(&fetch)
            .await
            .expect("take");
        next.job.expect("a job is ready").id
    }

    /// Adds job `id` with `opts` and takes the next job with token "t", as a worker would
    /// (the tests leave no other job waiting); a handle on job `id`.
    async fn add_and_take(&self, id: &str, opts: JobOptions) -> JobRef<'_, RedisBackend> {
        self.add(id, opts).await;
        self.take("t").await;
        self.rq.queue.job(JobId::from(id))
    }

    async fn field(&self, id: &str, field: &str) -> Option<String> {
        query(redis::cmd("HGET").arg(self.key(id)).arg(field)).await
    }

    async fn list(&self, part: &str) -> Vec<String> {
        query(redis::cmd("LRANGE").arg(self.key(part)).arg(0).arg(-1)).await
    }

    async fn zscore(&self, part: &str, member: &str) -> Option<f64> {
        query(redis::cmd("ZSCORE").arg(self.key(part)).arg(member)).await
    }

    async fn exists(&self, part: &str) -> bool {
        query::<i64>(redis::cmd("EXISTS").arg(self.key(part))).await == 1
    }

    /// The events of the stream, newest first (`count` of them at most), as field maps.
    async fn events(&self, count: Option<usize>) -> Vec<BTreeMap<String, String>> {
        let mut cmd = redis::cmd("XREVRANGE");
        cmd.arg(self.key("events")).arg("+").arg("-");
        if let Some(count) = count {
            cmd.arg("COUNT").arg(count);
        }
        let entries: Vec<(String, Vec<(String, String)>)> = query(&cmd).await;
        entries
            .into_iter()
            .map(|(_, fields)| fields.into_iter().collect())
            .collect()
    }

    /// The newest event named `name`, as its field map.
    async fn event(&self, name: &str) -> BTreeMap<String, String> {
        self.events(None)
            .await
            .into_iter()
            .find(|fields| fields.get("event").map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("no {name} event"))
    }

    /// The newest event of the stream, as its field map.
    async fn last_event(&self) -> BTreeMap<String, String> {
        self.events(Some(1))
            .await
            .into_iter()
            .next()
            .unwrap_or_default()
    }
}

/// `cmd`'s answer, on a connection of its own.
async fn query<T: redis::FromRedisValue>(cmd: &redis::Cmd) -> T {
    cmd.query_async(&mut support::redis().await)
        .await
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

#[tokio::test]
async fn progress_data_and_logs_are_stored_like_node() {
    let e = env("basics").await;
    let job = e.add("a", JobOptions::new().keep_logs(2)).await;
    let by_id = e.rq.queue.job(JobId::from("a"));

    by_id.update_progress(&42).await.expect("progress");
    assert_eq!(e.field("a", "progress").await.as_deref(), Some("42"));
    let event = e.last_event().await;
    assert_eq!(event.get("event").map(String::as_str), Some("progress"));
    assert_eq!(event.get("jobId").map(String::as_str), Some("a"));
    assert_eq!(event.get("data").map(String::as_str), Some("42"));

    by_id
        .update_progress(&json!({"pct": 5}))
        .await
        .expect("progress");
    assert_eq!(
        e.field("a", "progress").await.as_deref(),
        Some(r#"{"pct":5}"#)
    );

    by_id.update_data(&json!({"n": "b"})).await.expect("data");
    assert_eq!(e.field("a", "data").await.as_deref(), Some(r#"{"n":"b"}"#));

    // With the job at hand, its `keepLogs` (2) applies, as Node's `job.log` does.
    let handle = e.rq.queue.job_of(&job);
    assert_eq!(handle.log("one").await.expect("log"), 1);
    assert_eq!(handle.log("two").await.expect("log"), 2);
    assert_eq!(handle.log("three").await.expect("log"), 2);
    assert_eq!(e.list("a:logs").await, ["two", "three"]);
    // By id there are no options to read: every line is kept (`Job.addJobLog` without keepLogs).
    assert_eq!(by_id.log("four").await.expect("log"), 3);

    by_id.clear_logs(Some(1)).await.expect("clear");
    assert_eq!(e.list("a:logs").await, ["four"]);
    by_id.clear_logs(None).await.expect("clear");
    assert!(!e.exists("a:logs").await);

    let missing = e.rq.queue.job(JobId::from("nope"));
    let err = missing.update_progress(&1).await.expect_err("no job");
    assert_eq!(script_code(&err), ScriptErrorCode::JobNotFound);
}

#[tokio::test]
async fn state_predicates_promote_delay_and_priority() {
    let e = env("states").await;
    e.add("w", JobOptions::new()).await;
    e.add("p", JobOptions::new().priority(3)).await;
    e.add("d", JobOptions::new().delay(Duration::from_secs(10)))
        .await;

    let w = e.rq.queue.job(JobId::from("w"));
    let p = e.rq.queue.job(JobId::from("p"));
    let d = e.rq.queue.job(JobId::from("d"));
    assert_eq!(w.get_state().await.expect("state"), Some(JobState::Waiting));
    assert!(w.is_waiting().await.expect("waiting"));
    assert!(!w.is_delayed().await.expect("delayed"));
    assert!(p.is_prioritized().await.expect("prioritized"));
    assert!(!p.is_waiting().await.expect("waiting"));
    assert!(d.is_delayed().await.expect("delayed"));
    assert!(!d.is_completed().await.expect("completed"));
    assert!(!d.is_failed().await.expect("failed"));
    assert!(!d.is_waiting_children().await.expect("waiting-children"));
    assert_eq!(
        e.rq.queue
            .job(JobId::from("x"))
            .get_state()
            .await
            .expect("state"),
        None
    );

    // changeDelay reschedules from now: score = (now + delay) * 0x1000 (+ a counter < 0x1000).
    d.change_delay(Duration::from_secs(60))
        .await
        .expect("delay");
    let score = e.zscore("delayed", "d").await.expect("still delayed");
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let due = (score as u64) >> 12;
    assert_eq!(due, NOW + 60_000);
    assert_eq!(e.field("d", "delay").await.as_deref(), Some("60000"));

    d.promote().await.expect("promote");
    assert_eq!(e.zscore("delayed", "d").await, None);
    assert!(d.is_waiting().await.expect("waiting"));
    assert_eq!(e.field("d", "delay").await.as_deref(), Some("0"));
    assert_eq!(
        script_code(&d.promote().await.expect_err("not delayed")),
        ScriptErrorCode::NotInState
    );

    w.change_priority(7, false).await.expect("priority");
    assert!(w.is_prioritized().await.expect("prioritized"));
    assert_eq!(e.field("w", "priority").await.as_deref(), Some("7"));
    assert!(!e.list("wait").await.contains(&"w".to_owned()));

    // "p" (priority 3) now comes before "w" (7); delayed-then-promoted "d" has none, so first.
    let first = e.take("tok").await;
    assert_eq!(first.as_str(), "d");
    assert!(d.is_active().await.expect("active"));
}

#[tokio::test]
async fn manual_moves_refuse_another_token() {
    let e = env("tokens").await;
    e.add("a", JobOptions::new()).await;
    e.add("parent", JobOptions::new()).await;
    let parent_opts = ParentOptions::new("parent", e.base());
    e.add("child", JobOptions::new().parent(parent_opts)).await;
    assert_eq!(e.take("right").await.as_str(), "a");
    let a = e.rq.queue.job(JobId::from("a"));
    let wrong = token("wrong");

    let err = a
        .move_to_completed(&1, &wrong, false)
        .await
        .expect_err("mismatch");
    assert_eq!(script_code(&err), ScriptErrorCode::LockMismatch);
    let err = a
        .move_to_failed(&JobFailure::new("x"), &wrong, false)
        .await
        .expect_err("mismatch");
    assert_eq!(script_code(&err), ScriptErrorCode::LockMismatch);
    let err = a
        .move_to_delayed(NOW + 1000, &wrong)
        .await
        .expect_err("mismatch");
    assert_eq!(script_code(&err), ScriptErrorCode::LockMismatch);
    let err = a.move_to_wait(&wrong).await.expect_err("mismatch");
    assert_eq!(script_code(&err), ScriptErrorCode::LockMismatch);
    // Without pending children there is nothing to wait for; the lock is not even checked.
    assert!(
        !a.move_to_waiting_children(&wrong, None)
            .await
            .expect("none")
    );
    // Nothing moved.
    assert!(a.is_active().await.expect("active"));

    assert!(
        !a.extend_lock(&wrong, Duration::from_secs(60))
            .await
            .expect("extend")
    );
    assert!(
        a.extend_lock(&token("right"), Duration::from_secs(60))
            .await
            .expect("extend")
    );
    let mut con = support::redis().await;
    let ttl: i64 = redis::cmd("PTTL")
        .arg(e.key("a:lock"))
        .query_async(&mut con)
        .await
        .expect("PTTL");
    assert!(
        ttl > 30_000 && ttl <= 60_000,
        "lock extended to 60 s, ttl {ttl}"
    );

    // The right token completes it, storing the return value as JSON.
    e.clock.set(NOW + 500);
    let finished = a
        .move_to_completed(&json!({"ok": true}), &token("right"), false)
        .await
        .expect("complete");
    assert_eq!(finished.finished_on, NOW + 500);
    assert_eq!(
        e.field("a", "returnvalue").await.as_deref(),
        Some(r#"{"ok":true}"#)
    );
    assert_eq!(
        e.field("a", "finishedOn").await.as_deref(),
        Some("500").map(|_| "1700000000500")
    );
    assert!(e.zscore("completed", "a").await.is_some());
    assert!(a.is_completed().await.expect("completed"));
    let event = e.event("completed").await;
    assert_eq!(
        event.get("returnvalue").map(String::as_str),
        Some(r#"{"ok":true}"#)
    );

    // A parent with a pending child parks in waiting-children; wait-for-nothing is false.
    assert_eq!(e.take("ptok").await.as_str(), "parent");
    let parent = e.rq.queue.job(JobId::from("parent"));
    let err = parent
        .move_to_waiting_children(&wrong, None)
        .await
        .expect_err("mismatch");
    assert_eq!(script_code(&err), ScriptErrorCode::LockMismatch);
    let child = ParentOptions::new("child", e.base());
    // Redis only: upstream's PostgreSQL parks the parent even for a job that is not its child.
    assert!(
        !parent
            .move_to_waiting_children(&token("ptok"), Some(&ParentOptions::new("other", e.base())))
            .await
            .expect("not a pending child")
    );
    assert!(
        parent
            .move_to_waiting_children(&token("ptok"), Some(&child))
            .await
            .expect("park")
    );
    assert!(
        parent
            .is_waiting_children()
            .await
            .expect("waiting-children")
    );
    assert!(e.zscore("waiting-children", "parent").await.is_some());
}

#[tokio::test]
async fn move_to_delayed_and_back_to_wait() {
    let e = env("delays").await;
    let a = e.add_and_take("a", JobOptions::new()).await;

    let delay = a
        .move_to_delayed(NOW + 5000, &token("t"))
        .await
        .expect("delay");
    assert_eq!(delay, Duration::from_secs(5));
    let score = e.zscore("delayed", "a").await.expect("delayed");
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let due = (score as u64) >> 12;
    assert_eq!(due, NOW + 5000);
    assert!(!e.exists("a:lock").await);
    // A deliberate delay is not a failed attempt.
    assert_eq!(e.field("a", "atm").await, None);

    a.promote().await.expect("promote");
    e.take("t2").await;
    // A time in the past means no delay.
    let err = a
        .move_to_delayed(NOW - 1, &token("t"))
        .await
        .expect_err("old token");
    assert_eq!(script_code(&err), ScriptErrorCode::LockMismatch);

    let ttl = a.move_to_wait(&token("t2")).await.expect("to wait");
    assert_eq!(ttl, Duration::ZERO);
    assert_eq!(e.list("wait").await, ["a"]);
    assert!(!e.exists("a:lock").await);
    assert!(a.is_waiting().await.expect("waiting"));
}

#[tokio::test]
async fn move_to_failed_retries_then_trims_stacktraces_like_node() {
    let e = env("failing").await;
    e.add("a", JobOptions::new().attempts(3).stack_trace_limit(2))
        .await;
    let a = e.rq.queue.job(JobId::from("a"));

    for (n, expected) in [(1, FailOutcome::Retried), (2, FailOutcome::Retried)] {
        e.take("t").await;
        let failure = JobFailure::new(format!("boom {n}")).stack(format!("Error: boom {n}\n at x"));
        let outcome = fail_attempt(&a, &failure).await;
        assert_eq!(outcome, expected);
        assert!(a.is_waiting().await.expect("retried at once"));
        assert_eq!(e.field("a", "atm").await, Some(n.to_string()));
        assert_eq!(
            e.field("a", "failedReason").await,
            Some(format!("boom {n}"))
        );
    }
    assert_eq!(
        e.field("a", "stacktrace").await.as_deref(),
        Some(r#"["Error: boom 1\n at x","Error: boom 2\n at x"]"#)
    );

    e.take("t").await;
    e.clock.set(NOW + 9);
    let failure = JobFailure::new("boom 3").stack("Error: boom 3\n at x");
    let outcome = fail_attempt(&a, &failure).await;
    assert!(matches!(outcome, FailOutcome::Failed(f) if f.finished_on == NOW + 9));
    // The third trace pushed the first out: `stackTraceLimit` 2 keeps the newest two.
    assert_eq!(
        e.field("a", "stacktrace").await.as_deref(),
        Some(r#"["Error: boom 2\n at x","Error: boom 3\n at x"]"#)
    );
    assert_eq!(
        e.field("a", "failedReason").await.as_deref(),
        Some("boom 3")
    );
    assert_eq!(e.field("a", "atm").await.as_deref(), Some("3"));
    assert!(e.zscore("failed", "a").await.is_some());
    // The queue is empty now, so a `drained` event follows the `failed` one.
    let event = e.event("failed").await;
    assert_eq!(
        event.get("failedReason").map(String::as_str),
        Some("boom 3")
    );

    // stackTraceLimit 0 keeps none; an unrecoverable failure skips the remaining attempts.
    let z = e
        .add_and_take("z", JobOptions::new().attempts(5).stack_trace_limit(0))
        .await;
    let outcome = fail_attempt(&z, &fatal()).await;
    assert!(matches!(outcome, FailOutcome::Failed(_)));
    assert_eq!(e.field("z", "stacktrace").await.as_deref(), Some("[]"));
    assert!(z.is_failed().await.expect("failed"));

    // With a backoff the retry waits in delayed for the backoff's delay.
    let b = e.add_and_take("b", retried_later()).await;
    let outcome = fail_attempt(&b, &JobFailure::new("later")).await;
    assert_retried_later(&outcome);
    let score = e.zscore("delayed", "b").await.expect("delayed");
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let due = (score as u64) >> 12;
    assert_eq!(due, NOW + 9 + 3000, "RETRY_DELAY after the failure");
    assert_eq!(e.field("b", "atm").await.as_deref(), Some("1"));
    // No stack given: no trace appended, but Node still writes the (empty) list.
    assert_eq!(e.field("b", "stacktrace").await.as_deref(), Some("[]"));
}

#[tokio::test]
async fn retry_and_remove() {
    let e = env("retry").await;
    let a = e.add_and_take("a", JobOptions::new()).await;
    a.move_to_completed(&"done", &token("t"), false)
        .await
        .expect("complete");
    assert_eq!(e.field("a", "atm").await.as_deref(), Some("1"));

    let err = a
        .retry(FinishedState::Failed, ReprocessOptions::default())
        .await
        .expect_err("not failed");
    assert_eq!(script_code(&err), ScriptErrorCode::NotInState);

    let opts = ReprocessOptions {
        reset_attempts_made: true,
        reset_attempts_started: true,
    };
    a.retry(FinishedState::Completed, opts)
        .await
        .expect("retry");
    assert_eq!(e.list("wait").await, ["a"]);
    assert_eq!(e.zscore("completed", "a").await, None);
    assert_eq!(e.field("a", "returnvalue").await, None);
    assert_eq!(e.field("a", "finishedOn").await, None);
    // Reset counters are deleted, not zeroed, by upstream's script.
    assert_eq!(e.field("a", "atm").await, None);
    assert_eq!(e.field("a", "ats").await, None);
    assert_eq!(
        e.last_event().await.get("event").map(String::as_str),
        Some("waiting")
    );

    let err =
        e.rq.queue
            .job(JobId::from("ghost"))
            .retry(FinishedState::Failed, ReprocessOptions::default())
            .await
            .expect_err("missing");
    assert_eq!(script_code(&err), ScriptErrorCode::JobNotFound);

    // A locked job is not removed; once free it is, with its keys.
    e.take("t").await;
    assert!(!a.remove(true).await.expect("remove"));
    assert!(e.exists("a").await);
    a.move_to_wait(&token("t")).await.expect("release");
    a.log("line").await.expect("log");
    assert!(a.remove(true).await.expect("remove"));
    assert!(!e.exists("a").await);
    assert!(!e.exists("a:logs").await);
    assert!(e.list("wait").await.is_empty());
    assert_eq!(a.get_state().await.expect("state"), None);
}
