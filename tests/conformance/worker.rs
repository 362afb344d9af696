//! The worker side: outcomes, retries, ordering, concurrency, delays, stalls, limits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bullmq::backend::RateLimiter;
use bullmq::{Backoff, BulkJob, JobError, JobId, JobOptions, JobState, WorkerEvent};
use serde_json::{Value, json};

use crate::ctx::{Ctx, WAIT, fast};
use crate::store::Store;
use crate::support::stalled::{run_until, run_until_stalled};
use crate::support::{eventually, next_event};

pub async fn completes_jobs_with_return_values<S: Store>() {
    let ctx = Ctx::<S>::new("complete").await;
    let id = ctx
        .add("sum", json!({"a": 2, "b": 3}), JobOptions::new())
        .await;
    let worker = ctx
        .worker(fast().name("rusty").autorun(false), |job, _| async move {
            let v: Value = job.data_as()?;
            job.update_progress(&json!({"pct": 50})).await?;
            Ok(json!({"sum": v["a"].as_i64().unwrap_or(0) + v["b"].as_i64().unwrap_or(0)}))
        })
        .await;
    let mut rx = run_until(
        &worker,
        "active",
        WAIT,
        |e| matches!(e, WorkerEvent::Active { job } if job.id == id),
    )
    .await;
    next_event(
        &mut rx,
        "progress",
        WAIT,
        |e| matches!(e, WorkerEvent::Progress { progress, .. } if progress["pct"] == 50),
    )
    .await;
    let done = next_event(&mut rx, "completed", WAIT, |e| {
        matches!(e, WorkerEvent::Completed { .. })
    })
    .await;
    let WorkerEvent::Completed { return_value, .. } = done else {
        unreachable!()
    };
    assert_eq!(return_value, r#"{"sum":5}"#);
    ctx.wait_state(&id, JobState::Completed).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.return_value.as_deref(), Some(r#"{"sum":5}"#));
    assert_eq!(job.progress, json!({"pct": 50}));
    assert_eq!((job.attempts_made, job.attempts_started), (1, 1));
    assert_eq!(job.processed_by.as_deref(), Some("rusty"));
    assert!(job.finished_on >= job.processed_on && job.processed_on.is_some());
    worker.close().await;
    assert!(!worker.is_running());
}

pub async fn retries_then_fails_with_the_reason<S: Store>() {
    let ctx = Ctx::<S>::new("retries").await;
    let id = ctx
        .add_with(
            "f",
            JobOptions::new()
                .attempts(3)
                .backoff(Backoff::fixed(Duration::from_millis(50))),
        )
        .await;
    let worker = ctx
        .worker(fast(), |job, _| async move {
            Err(JobError::failed(format!("boom {}", job.attempts_made)))
        })
        .await;
    ctx.wait_state(&id, JobState::Failed).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.attempts_made, 3);
    assert_eq!(job.failed_reason.as_deref(), Some("boom 2"));
    assert_eq!(job.stacktrace.len(), 3);
    worker.close().await;
}

pub async fn processes_by_priority_then_fifo<S: Store>() {
    let ctx = Ctx::<S>::new("priority").await;
    let jobs = [
        ("low", 5),
        ("high", 1),
        ("plain-1", 0),
        ("mid", 3),
        ("plain-2", 0),
    ];
    for (name, priority) in jobs {
        let opts = if priority > 0 {
            JobOptions::new().priority(priority)
        } else {
            JobOptions::new()
        };
        ctx.add_with(name, opts).await;
    }
    let order = Arc::new(Mutex::new(Vec::new()));
    let seen = order.clone();
    let worker = ctx
        .worker(fast(), move |job, _| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(job.name.clone());
                Ok(Value::Null)
            }
        })
        .await;
    eventually("all processed", WAIT, || async {
        order.lock().unwrap().len() == 5
    })
    .await;
    // Jobs without a priority come first (FIFO), then by priority.
    assert_eq!(
        *order.lock().unwrap(),
        ["plain-1", "plain-2", "high", "mid", "low"]
    );
    worker.close().await;
}

pub async fn every_job_once_under_concurrency<S: Store>() {
    let ctx = Ctx::<S>::new("concurrency").await;
    let jobs = (0..200)
        .map(|i| BulkJob {
            name: "c".to_owned(),
            data: json!({ "i": i }),
            opts: JobOptions::new(),
        })
        .collect();
    ctx.queue.add_bulk(jobs).await.unwrap();
    let runs: Arc<Mutex<HashMap<JobId, u32>>> = Arc::default();
    let mut workers = Vec::new();
    for _ in 0..2 {
        let runs = runs.clone();
        workers.push(
            ctx.worker(fast().concurrency(8), move |job, _| {
                let runs = runs.clone();
                async move {
                    *runs.lock().unwrap().entry(job.id.clone()).or_default() += 1;
                    // Simulates work.
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    Ok(json!(job.id.as_str()))
                }
            })
            .await,
        );
    }
    eventually("200 completed", WAIT, || async {
        ctx.queue
            .get_job_count_by_types(&[bullmq::job::JobType::State(JobState::Completed)])
            .await
            .unwrap()
            == 200
    })
    .await;
    for worker in &workers {
        worker.close().await;
    }
    let runs = runs.lock().unwrap();
    assert_eq!(runs.len(), 200);
    assert!(runs.values().all(|n| *n == 1), "a job ran twice");
}

pub async fn delayed_job_runs_when_due<S: Store>() {
    let ctx = Ctx::<S>::new("delay").await;
    let worker = ctx
        .worker(fast(), |_job, _| async move { Ok(json!("late")) })
        .await;
    let added = Instant::now();
    let id = ctx
        .add_with("d", JobOptions::new().delay(Duration::from_millis(700)))
        .await;
    assert_eq!(ctx.state(&id).await, Some(JobState::Delayed));
    ctx.wait_state(&id, JobState::Completed).await;
    assert!(added.elapsed() >= Duration::from_millis(650), "ran early");
    let job = ctx.job(&id).await;
    assert!(job.processed_on.unwrap() >= job.timestamp + 700);
    worker.close().await;
}

pub async fn stalled_job_is_taken_again<S: Store>() {
    let ctx = Ctx::<S>::new("stalled").await;
    let id = ctx.add_with("s", JobOptions::new()).await;
    // Taken as a crashed worker would have: active, with a short lock nobody renews.
    let taken = ctx.take_for("crashed", Duration::from_millis(100)).await;
    assert_eq!(taken.as_ref(), Some(&id));
    // Waits for the 100 ms lock to expire on the server.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let opts = fast()
        .stalled_interval(Duration::from_millis(100))
        .autorun(false);
    let worker = ctx
        .worker(opts, |_job, _| async move { Ok(json!("recovered")) })
        .await;
    run_until_stalled(&worker, &id, WAIT).await;
    ctx.wait_state(&id, JobState::Completed).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.stalled_counter, 1);
    assert_eq!(job.return_value.as_deref(), Some("\"recovered\""));
    worker.close().await;
}

pub async fn unrecoverable_error_skips_retries<S: Store>() {
    let ctx = Ctx::<S>::new("unrecoverable").await;
    let id = ctx.add_with("u", JobOptions::new().attempts(5)).await;
    let worker = ctx
        .worker(fast(), |_job, _| async move {
            Err(JobError::unrecoverable("bad input"))
        })
        .await;
    ctx.wait_state(&id, JobState::Failed).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.attempts_made, 1);
    assert_eq!(job.failed_reason.as_deref(), Some("bad input"));
    worker.close().await;
}

pub async fn rate_limiter_spaces_jobs<S: Store>() {
    let ctx = Ctx::<S>::new("limiter").await;
    for i in 0..4 {
        ctx.add("r", json!({ "i": i }), JobOptions::new()).await;
    }
    let started = Instant::now();
    let limiter = RateLimiter {
        max: 2,
        duration: Duration::from_millis(500),
    };
    let worker = ctx
        .worker(
            fast().concurrency(4).limiter(limiter),
            |_job, _| async move { Ok(Value::Null) },
        )
        .await;
    eventually("4 completed", WAIT, || async {
        ctx.queue
            .get_job_count_by_types(&[bullmq::job::JobType::State(JobState::Completed)])
            .await
            .unwrap()
            == 4
    })
    .await;
    // Two windows at least: the second pair waited for the first window to pass.
    assert!(
        started.elapsed() >= Duration::from_millis(450),
        "{:?}",
        started.elapsed()
    );
    worker.close().await;
}
