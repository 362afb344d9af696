//! What the worker does with each processor outcome: delays, moves back, rate limits,
//! waiting for children, backoffs, retention of finished jobs, started-attempt limits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bullmq::KeepJobs::{KeepAll, RemoveAll};
use bullmq::backend::{Backend, Range};
use bullmq::{
    ActiveJob, Backoff, CancellationToken, Job, JobError, JobId, JobOptions, JobState, KeepJobs,
    ProcessResult, Worker, WorkerOptions,
};
use serde_json::{Value, json};

use crate::ctx::{Ctx, WAIT, fast, now_ms, working_for};
use crate::store::Store;
use crate::support::eventually;

pub async fn processor_delay_is_not_an_attempt<S: Store>() {
    let ctx = Ctx::<S>::new("outcome-delay").await;
    let id = ctx.add_with("delay", JobOptions::new().attempts(1)).await;
    let worker = ctx
        .worker(fast(), |job, _| async move {
            if job.attempts_started == 1 {
                return Err(JobError::delay_until(now_ms() + 60_000));
            }
            Ok(json!("later"))
        })
        .await;
    ctx.wait_state(&id, JobState::Delayed).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.attempts_made, 0, "a deliberate delay is not an attempt");
    assert_eq!(job.attempts_started, 1);
    assert!(job.delay > Duration::from_secs(50), "{:?}", job.delay);
    assert_eq!(ctx.queue.get_delayed_count(None).await.unwrap(), 1);
    // Promoted, it runs again and completes on its single allowed attempt.
    ctx.queue.job(id.clone()).promote().await.unwrap();
    ctx.wait_state(&id, JobState::Completed).await;
    let job = ctx.job(&id).await;
    assert_eq!((job.attempts_made, job.attempts_started), (1, 2));
    worker.close().await;
}

/// A worker whose processor answers `first` on a job's first start and its start count after.
async fn second_start_completes<S: Store>(
    ctx: &Ctx<S>,
    first: JobError,
) -> Worker<
    S::B,
    impl Fn(ActiveJob<S::B>, CancellationToken) -> std::future::Ready<ProcessResult>
    + Send
    + Sync
    + 'static,
> {
    ctx.worker(fast(), move |job, _| {
        std::future::ready(if job.attempts_started == 1 {
            Err(first.clone())
        } else {
            Ok(json!(job.attempts_started))
        })
    })
    .await
}

pub async fn processor_back_to_wait_runs_again<S: Store>() {
    let ctx = Ctx::<S>::new("outcome-wait").await;
    let id = ctx.add_with("again", JobOptions::new()).await;
    let worker = second_start_completes(&ctx, JobError::BackToWait).await;
    ctx.wait_state(&id, JobState::Completed).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.return_value.as_deref(), Some("2"));
    assert_eq!(
        job.attempts_made, 1,
        "moving back to wait is not an attempt"
    );
    worker.close().await;
}

pub async fn processor_waiting_children_without_children_runs_again<S: Store>() {
    let ctx = Ctx::<S>::new("outcome-children").await;
    let id = ctx.add_with("parent", JobOptions::new()).await;
    let worker = second_start_completes(&ctx, JobError::WaitingChildren).await;
    ctx.wait_state(&id, JobState::Completed).await;
    assert_eq!(ctx.job(&id).await.return_value.as_deref(), Some("2"));
    worker.close().await;
}

pub async fn processor_rate_limit_holds_the_queue<S: Store>() {
    let ctx = Ctx::<S>::new("outcome-limit").await;
    let id = ctx.add_with("limit", JobOptions::new()).await;
    let started = Instant::now();
    let worker = second_start_completes(
        &ctx,
        JobError::RateLimited {
            delay: Duration::from_millis(700),
        },
    )
    .await;
    ctx.wait_state(&id, JobState::Completed).await;
    assert!(
        started.elapsed() >= Duration::from_millis(600),
        "the queue was not rate limited: {:?}",
        started.elapsed()
    );
    let job = ctx.job(&id).await;
    assert_eq!(job.return_value.as_deref(), Some("2"));
    assert_eq!(job.attempts_made, 1, "a rate limit is not an attempt");
    worker.close().await;
}

pub async fn backoffs_space_retries<S: Store>() {
    let ctx = Ctx::<S>::new("backoffs").await;
    let mut retried = Vec::new();
    for (name, backoff) in [
        ("fixed", Backoff::fixed(Duration::from_millis(200))),
        ("expo", Backoff::exponential(Duration::from_millis(100))),
        ("custom", Backoff::custom("linear")),
        (
            "jitter",
            Backoff::exponential(Duration::from_millis(40)).jitter(0.5),
        ),
    ] {
        let opts = JobOptions::new().attempts(3).backoff(backoff);
        retried.push(ctx.add_with(name, opts).await);
    }
    let none = ctx.add_with("none", JobOptions::new().attempts(2)).await;
    let starts: Arc<Mutex<HashMap<String, Vec<Instant>>>> = Arc::default();
    let asked: Arc<Mutex<Vec<u32>>> = Arc::default();
    let (seen, strategy) = (starts.clone(), asked.clone());
    let worker = Worker::builder(
        bullmq::Queue::try_new(ctx.name.clone(), ctx.backend().await)
            .expect("the backend is bound to this queue"),
        move |job: ActiveJob<S::B>, _c: CancellationToken| {
            let seen = seen.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .entry(job.name.clone())
                    .or_default()
                    .push(Instant::now());
                Err::<Value, _>(JobError::Failed {
                    message: format!("boom {}", job.attempts_made),
                    stack: Some(format!("Error: boom\n    at attempt {}", job.attempts_made)),
                })
            }
        },
    )
    .options(fast().concurrency(5))
    .backoff_strategy("linear", move |n, _job, msg| {
        assert!(msg.starts_with("boom"));
        strategy.lock().unwrap().push(n);
        Some(Duration::from_millis(u64::from(n) * 150))
    })
    .build()
    .await
    .unwrap();
    for id in &retried {
        ctx.wait_state(id, JobState::Failed).await;
        let job = ctx.job(id).await;
        assert_eq!(job.attempts_made, 3, "{id}");
        assert_eq!(job.failed_reason.as_deref(), Some("boom 2"));
        assert_eq!(job.stacktrace.len(), 3);
        assert_eq!(job.stacktrace[0], "Error: boom\n    at attempt 0");
    }
    // Without a backoff, retried at once until its attempts run out.
    ctx.wait_state(&none, JobState::Failed).await;
    assert_eq!(ctx.job(&none).await.attempts_made, 2);
    worker.close().await;
    let starts = starts.lock().unwrap();
    let runs: usize = starts.values().map(Vec::len).sum();
    assert_eq!(runs, 3 * 4 + 2, "every attempt ran once");
    let gaps = |name: &str| -> Vec<Duration> {
        let at = &starts[name];
        assert_eq!(at.len(), 3, "{name}");
        at.windows(2).map(|w| w[1] - w[0]).collect()
    };
    // Fixed: 200 ms each; exponential: 100 then 200 ms; custom: 150 then 300 ms.
    for (name, minimum) in [
        ("fixed", [200, 200]),
        ("expo", [100, 200]),
        ("custom", [150, 300]),
    ] {
        for (gap, min) in gaps(name).into_iter().zip(minimum) {
            assert!(
                gap >= Duration::from_millis(min - 20),
                "{name}: retried after {gap:?}, backoff {min} ms"
            );
        }
    }
    assert_eq!(*asked.lock().unwrap(), [1, 2]);
}

/// Runs `n` jobs named `j0..` through a worker that completes (or, when `fail`, fails) each
/// one in order, `keep` saying which of the finished ones stay.
async fn run_in_order<S: Store>(ctx: &Ctx<S>, n: usize, keep: KeepJobs, fail: bool) -> Vec<JobId> {
    let opts = if fail {
        JobOptions::new().remove_on_fail(keep)
    } else {
        JobOptions::new().remove_on_complete(keep)
    };
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(
            ctx.add(&format!("j{i}"), json!({ "i": i }), opts.clone())
                .await,
        );
    }
    let worker = ctx
        .worker(fast(), move |job, _| async move {
            if fail {
                Err(JobError::failed(format!("no {}", job.name)))
            } else {
                Ok(json!(job.name))
            }
        })
        .await;
    let last = ids.last().unwrap().clone();
    eventually("the last job finished", WAIT, || async {
        ctx.queue
            .get_job(&last)
            .await
            .unwrap()
            .is_none_or(|j| j.finished_on.is_some())
            && ctx.count_in(JobState::Waiting).await == 0
            && ctx.count_in(JobState::Active).await == 0
    })
    .await;
    worker.close().await;
    ids
}

pub async fn remove_on_complete_keeps_the_newest<S: Store>() {
    let ctx = Ctx::<S>::new("keep-complete").await;
    let ids = run_in_order(&ctx, 5, KeepJobs::Number(2), false).await;
    let kept = ctx.queue.get_completed(Range::ALL).await.unwrap();
    let mut kept: Vec<JobId> = kept.into_iter().map(|j| j.id).collect();
    kept.sort_by_key(|id| ids.iter().position(|i| i == id));
    assert_eq!(kept, ids[3..]);
    for id in &ids[..3] {
        assert!(ctx.queue.get_job(id).await.unwrap().is_none(), "{id} kept");
    }
}

pub async fn remove_on_fail_keeps_a_count<S: Store>() {
    let ctx = Ctx::<S>::new("keep-fail").await;
    let ids = run_in_order(&ctx, 4, KeepJobs::policy_count(1), true).await;
    assert_eq!(ctx.count_in(JobState::Failed).await, 1);
    let failed = ctx.queue.get_failed(Range::ALL).await.unwrap();
    assert_eq!(failed[0].id, ids[3]);
    assert_eq!(failed[0].failed_reason.as_deref(), Some("no j3"));
}

/// Fails the jobs named `fail` (reason `no`), completes the others with `1`.
async fn fail_the_failing<B: Backend>(job: ActiveJob<B>, _: CancellationToken) -> ProcessResult {
    match job.name.as_str() {
        "fail" => Err(JobError::failed("no")),
        _ => Ok(json!(1)),
    }
}

pub async fn remove_on_complete_true_removes_the_job<S: Store>() {
    let ctx = Ctx::<S>::new("keep-none").await;
    let gone = ctx
        .add_with("gone", JobOptions::new().remove_on_complete(RemoveAll))
        .await;
    let gone_failed = ctx
        .add_with("fail", JobOptions::new().remove_on_fail(RemoveAll))
        .await;
    let kept = ctx.add_with("kept", JobOptions::new()).await;
    let worker = ctx.worker(fast(), fail_the_failing).await;
    ctx.wait_state(&kept, JobState::Completed).await;
    ctx.wait_removed("both", &[&gone, &gone_failed]).await;
    assert_eq!(ctx.count_in(JobState::Completed).await, 1);
    assert_eq!(ctx.count_in(JobState::Failed).await, 0);
    worker.close().await;
}

pub async fn remove_on_complete_by_age<S: Store>() {
    let ctx = Ctx::<S>::new("keep-age").await;
    let opts = JobOptions::new().remove_on_complete(KeepJobs::policy_age(Duration::from_secs(1)));
    let old = ctx.add_with("old", opts.clone()).await;
    let worker = ctx
        .worker(fast(), |_job, _| async move { Ok(json!(1)) })
        .await;
    ctx.wait_state(&old, JobState::Completed).await;
    // Older than a second when the next job completes: removed then.
    // Waits for the completed job's 1 s age limit to expire on the server.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert!(ctx.queue.get_job(&old).await.unwrap().is_some());
    let new = ctx.add_with("new", opts).await;
    ctx.wait_state(&new, JobState::Completed).await;
    ctx.wait_removed("the old job", &[&old]).await;
    assert_eq!(ctx.count_in(JobState::Completed).await, 1);
    worker.close().await;
}

pub async fn worker_retention_applies_to_jobs_without_their_own<S: Store>() {
    let ctx = Ctx::<S>::new("keep-worker").await;
    let plain = ctx.add_with("plain", JobOptions::new()).await;
    let own = ctx
        .add_with("own", JobOptions::new().remove_on_complete(KeepAll))
        .await;
    let failing = ctx.add_with("fail", JobOptions::new()).await;
    let opts = fast()
        .remove_on_complete(RemoveAll)
        .remove_on_fail(RemoveAll);
    let worker = ctx.worker(opts, fail_the_failing).await;
    ctx.wait_state(&own, JobState::Completed).await;
    ctx.wait_removed("the others", &[&plain, &failing]).await;
    worker.close().await;
}

pub async fn max_started_attempts_fails_a_restarted_job<S: Store>() {
    let ctx = Ctx::<S>::new("max-started").await;
    let id = ctx.add_with("s", JobOptions::new().attempts(5)).await;
    // Started once by a worker that crashed, so it stalls and is started a second time.
    let job = failed_after_a_crash(&ctx, &id, fast().max_started_attempts(1)).await;
    assert_eq!(
        job.failed_reason.as_deref(),
        Some("job started more than allowable limit")
    );
    assert_eq!(job.attempts_started, 2);
    assert!(job.return_value.is_none());
}

/// Takes `id` for a worker that crashed (its 100 ms lock never renewed), then runs a worker
/// with `opts` and a 100 ms stalled check, whose processor must not complete it, until the
/// job fails; returns it.
async fn failed_after_a_crash<S: Store>(ctx: &Ctx<S>, id: &JobId, opts: WorkerOptions) -> Job {
    assert_eq!(
        ctx.take_for("crashed", Duration::from_millis(100))
            .await
            .as_ref(),
        Some(id)
    );
    // Waits for the 100 ms lock to expire on the server.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let opts = opts.stalled_interval(Duration::from_millis(100));
    let worker = ctx
        .worker(opts, |_job, _| async move { Ok(json!("never")) })
        .await;
    ctx.wait_state(id, JobState::Failed).await;
    worker.close().await;
    ctx.job(id).await
}

pub async fn a_job_stalled_too_often_fails<S: Store>() {
    let ctx = Ctx::<S>::new("stalled-out").await;
    let id = ctx.add_with("s", JobOptions::new()).await;
    let job = failed_after_a_crash(&ctx, &id, fast().max_stalled_count(0)).await;
    assert_eq!(
        job.failed_reason.as_deref(),
        Some("job stalled more than allowable limit")
    );
}

pub async fn a_panicking_processor_fails_the_job<S: Store>() {
    let ctx = Ctx::<S>::new("panics").await;
    let panics = ctx.add_with("panic", JobOptions::new().attempts(3)).await;
    let after = ctx.add_with("fine", JobOptions::new()).await;
    let worker = ctx
        .worker(fast(), |job, _| async move {
            if job.name == "panic" {
                panic!("processor blew up");
            }
            Ok(json!("ok"))
        })
        .await;
    ctx.wait_state(&panics, JobState::Failed).await;
    let job = ctx.job(&panics).await;
    let reason = job.failed_reason.unwrap();
    assert!(
        reason.contains("panicked") && reason.contains("processor blew up"),
        "{reason}"
    );
    assert_eq!(job.attempts_made, 3, "a panic is a failed attempt, retried");
    ctx.wait_state(&after, JobState::Completed).await;
    assert!(worker.is_running());
    worker.close().await;
}

pub async fn lock_renewal_keeps_a_long_job<S: Store>() {
    let ctx = Ctx::<S>::new("renewal").await;
    let id = ctx.add_with("long", JobOptions::new()).await;
    let opts = fast()
        .lock_duration(Duration::from_millis(1200))
        .stalled_interval(Duration::from_millis(100));
    // Each job works longer than the 1.2 s lock.
    let worker = ctx
        .worker(opts, working_for(Duration::from_millis(3000)))
        .await;
    let mut rx = worker.events();
    ctx.wait_state(&id, JobState::Completed).await;
    let job = ctx.job(&id).await;
    assert_eq!((job.attempts_started, job.stalled_counter), (1, 0));
    assert_eq!(job.return_value.as_deref(), Some("\"kept\""));
    while let Ok(e) = rx.try_recv() {
        assert!(
            !matches!(
                e,
                bullmq::WorkerEvent::Stalled { .. } | bullmq::WorkerEvent::LockLost { .. }
            ),
            "{e:?}"
        );
    }
    worker.close().await;
}
