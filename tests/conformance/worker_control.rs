//! Driving a worker: close, pause, concurrency, manual processing, queue-wide limits, metrics.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bullmq::backend::LockToken;
use bullmq::job::FinishedState;
use bullmq::{FailOutcome, JobFailure};
use bullmq::{JobOptions, JobState, WorkerEvent};
use serde_json::{Value, json};

use crate::ctx::{BoxFut, Ctx, WAIT, fast, working_for};
use crate::store::Store;
use crate::support::{eventually, next_event};

/// A processor that sleeps `ms` and records the peak of jobs running at once.
fn peak_tracker<B: Send + 'static>(
    ms: u64,
) -> (
    Arc<AtomicUsize>,
    impl Fn(bullmq::ActiveJob<B>, bullmq::CancellationToken) -> BoxFut + Clone + Send + Sync + 'static,
) {
    let now = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let seen = peak.clone();
    let f = move |_job, _cancel| {
        let (now, peak) = (now.clone(), seen.clone());
        Box::pin(async move {
            let running = now.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(running, Ordering::SeqCst);
            // Simulates work.
            tokio::time::sleep(Duration::from_millis(ms)).await;
            now.fetch_sub(1, Ordering::SeqCst);
            Ok(Value::Null)
        }) as BoxFut
    };
    (peak, f)
}

/// Waits until every job of `ids` completed.
async fn all_completed<S: Store>(ctx: &Ctx<S>, ids: &[bullmq::JobId]) {
    for id in ids {
        ctx.wait_state(id, JobState::Completed).await;
    }
}

pub async fn concurrency_runs_jobs_in_parallel<S: Store>() {
    let ctx = Ctx::<S>::new("parallel").await;
    let ids = ctx.add_numbered("p", 6).await;
    let (peak, f) = peak_tracker(300);
    let worker = ctx.worker(fast().concurrency(3), f).await;
    all_completed(&ctx, &ids).await;
    assert_eq!(peak.load(Ordering::SeqCst), 3);
    worker.close().await;
}

pub async fn set_concurrency_while_running<S: Store>() {
    let ctx = Ctx::<S>::new("set-concurrency").await;
    let ids = ctx.add_numbered("p", 8).await;
    let (peak, f) = peak_tracker(250);
    let worker = ctx.worker(fast().concurrency(1), f).await;
    ctx.wait_state(&ids[0], JobState::Completed).await;
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    worker.set_concurrency(4).unwrap();
    assert_eq!(worker.concurrency(), 4);
    assert!(worker.set_concurrency(0).is_err());
    all_completed(&ctx, &ids).await;
    assert_eq!(peak.load(Ordering::SeqCst), 4);
    worker.close().await;
}

pub async fn graceful_close_waits_for_jobs_in_flight<S: Store>() {
    let ctx = Ctx::<S>::new("close").await;
    let a = ctx.add_with("a", JobOptions::new()).await;
    let b = ctx.add_with("b", JobOptions::new()).await;
    // The jobs finish only once the worker is closing: one finished earlier would take `late`
    // with its fetch-next, as it may.
    let (closing_tx, closing) = tokio::sync::watch::channel(false);
    let worker = ctx
        .worker(fast().concurrency(2), move |_job, _| {
            let mut closing = closing.clone();
            async move {
                let _ = closing.wait_for(|c| *c).await;
                Ok(json!(1))
            }
        })
        .await;
    let mut rx = worker.events();
    let mut watch_closing = worker.events();
    tokio::spawn(async move {
        while let Ok(event) = watch_closing.recv().await {
            if matches!(event, WorkerEvent::Closing) {
                let _ = closing_tx.send(true);
                break;
            }
        }
    });
    ctx.wait_state(&a, JobState::Active).await;
    ctx.wait_state(&b, JobState::Active).await;
    let late = ctx.add_with("late", JobOptions::new()).await;
    worker.close().await;
    assert!(!worker.is_running());
    assert_eq!(ctx.state(&a).await, Some(JobState::Completed));
    assert_eq!(ctx.state(&b).await, Some(JobState::Completed));
    assert_eq!(
        ctx.state(&late).await,
        Some(JobState::Waiting),
        "taken while closing"
    );
    next_event(&mut rx, "closing", WAIT, |e| {
        matches!(e, WorkerEvent::Closing)
    })
    .await;
    next_event(&mut rx, "closed", WAIT, |e| {
        matches!(e, WorkerEvent::Closed)
    })
    .await;
}

pub async fn close_timeout_leaves_the_job_for_the_stalled_check<S: Store>() {
    let ctx = Ctx::<S>::new("close-timeout").await;
    let slow = ctx.add_with("slow", JobOptions::new()).await;
    // Each job works longer than the close timeout.
    let worker = ctx
        .worker(fast(), working_for(Duration::from_secs(5)))
        .await;
    ctx.wait_state(&slow, JobState::Active).await;
    // Gave up before the 5 s job ended: had it waited, the job would be completed now.
    assert!(!worker.close_timeout(Duration::from_millis(100)).await);
    assert_eq!(ctx.state(&slow).await, Some(JobState::Active), "not lost");
    let job = ctx.job(&slow).await;
    assert_eq!(job.attempts_made, 0);
    assert!(job.return_value.is_none());
}

pub async fn pause_and_resume_a_worker<S: Store>() {
    let ctx = Ctx::<S>::new("worker-pause").await;
    let worker = ctx
        .worker(fast(), |_job, _| async move { Ok(json!(1)) })
        .await;
    let mut rx = worker.events();
    worker.pause(false).await;
    assert!(worker.is_paused());
    next_event(&mut rx, "paused", WAIT, |e| {
        matches!(e, WorkerEvent::Paused)
    })
    .await;
    // Added the moment `pause` returns: no fetch begun before it may take this job.
    let id = ctx.add_with("p", JobOptions::new()).await;
    // A negative check, nothing to await: gives a worker that ignored the pause the time of
    // several fetch rounds to take the job.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(ctx.state(&id).await, Some(JobState::Waiting));
    worker.resume();
    assert!(!worker.is_paused());
    next_event(&mut rx, "resumed", WAIT, |e| {
        matches!(e, WorkerEvent::Resumed)
    })
    .await;
    ctx.wait_state(&id, JobState::Completed).await;
    worker.close().await;
}

pub async fn a_paused_queue_holds_its_workers<S: Store>() {
    let ctx = Ctx::<S>::new("queue-pause").await;
    ctx.queue.pause().await.unwrap();
    let worker = ctx
        .worker(fast(), |_job, _| async move { Ok(json!(1)) })
        .await;
    let id = ctx.add_with("p", JobOptions::new()).await;
    assert_eq!(ctx.state(&id).await, Some(JobState::Waiting));
    // A negative check, nothing to await: gives a worker that ignored the paused queue the
    // time of several fetch rounds to take the job.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        ctx.state(&id).await,
        Some(JobState::Waiting),
        "ran while paused"
    );
    ctx.queue.resume().await.unwrap();
    ctx.wait_state(&id, JobState::Completed).await;
    worker.close().await;
}

pub async fn manual_processing_with_get_next_job<S: Store>() {
    let ctx = Ctx::<S>::new("manual").await;
    let a = ctx.add("a", json!({"x": 1}), JobOptions::new()).await;
    let b = ctx
        .add("b", json!({"x": 2}), JobOptions::new().attempts(2))
        .await;
    let c = ctx.add("c", json!({"x": 3}), JobOptions::new()).await;
    let worker = ctx
        .worker(fast().autorun(false).name("manual"), |_job, _| async move {
            Ok(Value::Null)
        })
        .await;
    let token = LockToken::new("my-token");
    let job = worker.get_next_job(&token, true).await.unwrap().unwrap();
    assert_eq!(job.id, a);
    assert_eq!(ctx.state(&a).await, Some(JobState::Active));
    // Completing with fetch_next takes the next job in the same move.
    let finished = worker
        .job(&job)
        .move_to_completed(&json!("by hand"), &token, true)
        .await
        .unwrap();
    let next = finished.next.and_then(|n| n.job).expect("the next job");
    assert_eq!(next.id, b);
    let next = next.job.unwrap();
    let read = ctx.job(&a).await;
    assert_eq!(read.return_value.as_deref(), Some("\"by hand\""));
    assert_eq!(read.processed_by.as_deref(), Some("manual"));
    assert_eq!(ctx.state(&b).await, Some(JobState::Active));
    // Failing with attempts left retries it.
    let outcome = worker
        .job(&next)
        .move_to_failed(&JobFailure::new("manual failure"), &token, false)
        .await
        .unwrap();
    assert_eq!(outcome, FailOutcome::Retried);
    assert_eq!(ctx.state(&b).await, Some(JobState::Waiting));
    assert_eq!(
        ctx.job(&b).await.failed_reason.as_deref(),
        Some("manual failure")
    );
    // Two left (c, then b again), then nothing.
    let mut rest = Vec::new();
    while let Some(job) = worker.get_next_job(&token, false).await.unwrap() {
        worker
            .job(&job)
            .move_to_completed(&json!(1), &token, false)
            .await
            .unwrap();
        rest.push(job.id);
    }
    assert_eq!(rest, [c, b]);
    assert_eq!(ctx.count_in(JobState::Completed).await, 3);
    worker.close().await;
}

pub async fn global_concurrency_limits_all_workers<S: Store>() {
    let ctx = Ctx::<S>::new("global-concurrency").await;
    ctx.queue.set_global_concurrency(2).await.unwrap();
    assert_eq!(ctx.queue.get_global_concurrency().await.unwrap(), Some(2));
    let ids = ctx.add_numbered("p", 8).await;
    let (peak, f) = peak_tracker(150);
    let w1 = ctx.worker(fast().concurrency(4), f.clone()).await;
    let w2 = ctx.worker(fast().concurrency(4), f).await;
    all_completed(&ctx, &ids).await;
    assert_eq!(
        peak.load(Ordering::SeqCst),
        2,
        "more than the global concurrency ran"
    );
    w1.close().await;
    w2.close().await;
    ctx.queue.remove_global_concurrency().await.unwrap();
    assert_eq!(ctx.queue.get_global_concurrency().await.unwrap(), None);
}

pub async fn global_rate_limit_spaces_jobs<S: Store>() {
    let ctx = Ctx::<S>::new("global-limit").await;
    ctx.queue
        .set_global_rate_limit(2, Duration::from_millis(500))
        .await
        .unwrap();
    let limit = ctx.queue.get_global_rate_limit().await.unwrap().unwrap();
    assert_eq!((limit.max, limit.duration), (2, Duration::from_millis(500)));
    let ids = ctx.add_numbered("p", 5).await;
    let started = Instant::now();
    let worker = ctx
        .worker(
            fast().concurrency(5),
            |_job, _| async move { Ok(Value::Null) },
        )
        .await;
    all_completed(&ctx, &ids).await;
    // Three windows: 2 + 2 + 1.
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    worker.close().await;
    ctx.queue.remove_global_rate_limit().await.unwrap();
    assert!(ctx.queue.get_global_rate_limit().await.unwrap().is_none());
}

pub async fn metrics_count_finished_jobs<S: Store>() {
    let ctx = Ctx::<S>::new("metrics").await;
    for i in 0..5 {
        let name = if i < 3 { "ok" } else { "fail" };
        ctx.add_with(name, JobOptions::new()).await;
    }
    let worker = ctx
        .worker(fast().metrics_max_data_points(60), |job, _| async move {
            match job.name.as_str() {
                "ok" => Ok(json!(1)),
                _ => Err(bullmq::JobError::failed("no")),
            }
        })
        .await;
    eventually("all finished", WAIT, || async {
        ctx.count_in(JobState::Completed).await == 3 && ctx.count_in(JobState::Failed).await == 2
    })
    .await;
    worker.close().await;
    let completed = ctx
        .queue
        .get_metrics(FinishedState::Completed, 0, -1)
        .await
        .unwrap();
    let failed = ctx
        .queue
        .get_metrics(FinishedState::Failed, 0, -1)
        .await
        .unwrap();
    assert_eq!((completed.total, failed.total), (3, 2));
    assert_eq!(
        completed.count,
        u64::try_from(completed.data.len()).unwrap()
    );
    assert!(completed.prev_ts > 0);
    // Without metrics on, nothing is counted.
    let plain = ctx.other("metrics-off").await;
    plain
        .add("ok", &json!({}), JobOptions::new())
        .await
        .unwrap();
    let off = crate::ctx::worker_on(&ctx, "metrics-off", fast(), |_job, _| async move {
        Ok(json!(1))
    })
    .await;
    eventually("completed", WAIT, || async {
        plain
            .get_job_count_by_types(&[bullmq::job::JobType::State(JobState::Completed)])
            .await
            .unwrap()
            == 1
    })
    .await;
    off.close().await;
    let none = plain
        .get_metrics(FinishedState::Completed, 0, -1)
        .await
        .unwrap();
    assert_eq!(none.total, 0);
}
