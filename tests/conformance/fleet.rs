//! Running workers as a fleet: several workers on one shared backend, a dropped worker, a
//! pool scaled and supervised, cancellation with a reason, renewed locks, boxed processors.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::pool::{PoolEvent, Supervision, WorkerPool, WorkerPoolBuilder};
use bullmq::telemetry::RunState;
use bullmq::{
    ActiveJob, BoxProcessor, BulkJob, CancelReason, CancellationToken, JobError, JobId, JobOptions,
    JobState, Queue, Worker, WorkerEvent,
};
use serde_json::{Value, json};

use crate::ctx::{BoxFut, Ctx, WAIT, fast, working_for};
use crate::store::Store;
use crate::support::{eventually, next_event};

/// How long the fleet cases wait for thousands of jobs.
const LONG_WAIT: Duration = Duration::from_secs(120);

/// How often each job ran, by id.
type Runs = Arc<Mutex<HashMap<String, u32>>>;

/// A processor that counts how often it ran each job, after `work` of simulated work.
fn counting<B: Send + 'static>(
    work: Duration,
) -> (
    Runs,
    impl Fn(ActiveJob<B>, CancellationToken) -> BoxFut + Clone + Send + Sync + 'static,
) {
    let runs = Arc::new(Mutex::new(HashMap::new()));
    let seen = Arc::clone(&runs);
    let f = move |job: ActiveJob<B>, _cancel| {
        let seen = Arc::clone(&seen);
        *seen.lock().unwrap().entry(job.id.to_string()).or_insert(0) += 1;
        Box::pin(async move {
            if !work.is_zero() {
                // Simulates work.
                tokio::time::sleep(work).await;
            }
            Ok(Value::Null)
        }) as BoxFut
    };
    (runs, f)
}

/// A pool on `ctx`'s queue, to be configured, running a [`counting`] processor (`work` per
/// job); and its counts.
async fn counting_pool<S: Store>(
    ctx: &Ctx<S>,
    work: Duration,
) -> (
    Runs,
    WorkerPoolBuilder<
        S::B,
        impl Fn(ActiveJob<S::B>, CancellationToken) -> BoxFut + Clone + Send + Sync + 'static,
    >,
) {
    let (runs, f) = counting::<S::B>(work);
    let queue = Queue::try_new(ctx.name.clone(), ctx.backend().await)
        .expect("the backend is bound to this queue");
    (runs, WorkerPool::builder(queue, f))
}

async fn add_many<S: Store>(ctx: &Ctx<S>, n: usize) -> Vec<JobId> {
    let mut ids = Vec::with_capacity(n);
    let all: Vec<_> = (0..n)
        .map(|i| BulkJob {
            name: "fleet".to_owned(),
            data: json!({ "i": i }),
            opts: JobOptions::new(),
        })
        .collect();
    for chunk in all.chunks(500) {
        ids.extend(
            ctx.queue
                .add_bulk(chunk.to_vec())
                .await
                .unwrap()
                .into_iter()
                .map(|j| j.id),
        );
    }
    ids
}

/// Every job completed, each run exactly once, none left active.
async fn each_exactly_once<S: Store>(
    ctx: &Ctx<S>,
    ids: &[JobId],
    runs: &Mutex<HashMap<String, u32>>,
) {
    eventually("every job completed", LONG_WAIT, || async {
        ctx.count_in(JobState::Completed).await == ids.len() as u64
    })
    .await;
    {
        let runs = runs.lock().unwrap();
        for id in ids {
            assert_eq!(runs.get(id.as_str()), Some(&1), "job {id} ran once");
        }
        assert_eq!(runs.len(), ids.len());
    }
    assert_eq!(ctx.count_in(JobState::Active).await, 0, "none stuck active");
}

async fn workers_listed<S: Store>(ctx: &Ctx<S>, n: usize) {
    eventually(&format!("{n} workers listed"), WAIT, || async {
        ctx.queue.get_workers_count().await.unwrap() == n
    })
    .await;
}

pub async fn workers_sharing_one_backend_are_listed_and_close_alone<S: Store>() {
    let ctx = Ctx::<S>::new("shared").await;
    let backend = ctx.backend().await;
    let (runs, f) = counting::<S::B>(Duration::ZERO);
    let mut workers = Vec::new();
    for i in 0..4 {
        let opts = fast().concurrency(20).name(format!("w{i}"));
        let worker = Worker::new(ctx.name.clone(), backend.clone(), opts, f.clone());
        workers.push(worker.await.unwrap());
    }
    workers_listed(&ctx, 4).await;
    let ids = add_many(&ctx, 3000).await;
    eventually("some jobs done", LONG_WAIT, || async {
        ctx.count_in(JobState::Completed).await >= 300
    })
    .await;
    for worker in workers.drain(..3) {
        worker.close().await;
    }
    workers_listed(&ctx, 1).await;
    let last = workers.pop().unwrap();
    assert!(last.is_running());
    assert!(last.connections_healthy());
    each_exactly_once(&ctx, &ids, &runs).await;
    last.close().await;
    // The backend the workers were built on is still open.
    ctx.queue.get_job_counts(&[]).await.unwrap();
    let after =
        Queue::try_new(ctx.name.clone(), backend).expect("the backend is bound to this queue");
    after.get_job_counts(&[]).await.unwrap();
}

pub async fn a_dropped_worker_takes_no_more_jobs_and_deregisters<S: Store>() {
    let ctx = Ctx::<S>::new("dropped").await;
    let (runs, f) = counting::<S::B>(Duration::from_millis(600));
    let worker = ctx
        .worker(fast().concurrency(2).close_timeout(WAIT), f)
        .await;
    workers_listed(&ctx, 1).await;
    let first = [
        ctx.add_with("a", JobOptions::new()).await,
        ctx.add_with("b", JobOptions::new()).await,
    ];
    eventually("both jobs active", WAIT, || async {
        ctx.count_in(JobState::Active).await == 2
    })
    .await;
    drop(worker);
    let later = ctx.add_numbered("later", 3).await;
    for id in &first {
        ctx.wait_state(id, JobState::Completed).await;
    }
    workers_listed(&ctx, 0).await;
    // An absence has no signal to await: a live worker would take the later jobs in far
    // less than this.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(ctx.count_in(JobState::Active).await, 0);
    assert_eq!(ctx.count_in(JobState::Waiting).await, 3);
    let runs = runs.lock().unwrap();
    assert_eq!(runs.len(), 2, "only the jobs in flight ran: {runs:?}");
    for id in &later {
        assert!(!runs.contains_key(id.as_str()));
    }
}

pub async fn a_pool_scaled_under_load_runs_every_job_once<S: Store>() {
    let ctx = Ctx::<S>::new("pool").await;
    let (runs, pool) = counting_pool(&ctx, Duration::from_millis(2)).await;
    let pool = pool.options(fast().concurrency(10)).build().await.unwrap();
    assert_eq!(pool.size(), 1);
    workers_listed(&ctx, 1).await;
    let ids = add_many(&ctx, 2000).await;
    eventually("some jobs done", LONG_WAIT, || async {
        ctx.count_in(JobState::Completed).await >= 100
    })
    .await;
    pool.scale_to(10).await.unwrap();
    assert_eq!(pool.size(), 10);
    assert_eq!(pool.workers().await.len(), 10);
    workers_listed(&ctx, 10).await;
    eventually("half done", LONG_WAIT, || async {
        ctx.count_in(JobState::Completed).await >= 1000
    })
    .await;
    pool.scale_to(2).await.unwrap();
    assert_eq!(pool.size(), 2);
    workers_listed(&ctx, 2).await;
    each_exactly_once(&ctx, &ids, &runs).await;
    let health = pool.health().await;
    assert_eq!(
        (health.state, health.size, health.running),
        (RunState::Running, 2, 2)
    );
    assert!(health.is_ready() && health.is_live());
    assert!(pool.close().await);
    assert_eq!(pool.size(), 0);
    workers_listed(&ctx, 0).await;
    assert_eq!(
        pool.scale_to(1).await.unwrap_err().to_string(),
        "the worker pool is closed"
    );
}

pub async fn a_pool_restarts_a_stopped_worker_then_fails_past_its_budget<S: Store>() {
    use bullmq::backend::Lifecycle;
    let ctx = Ctx::<S>::new("supervised").await;
    let (runs, pool) = counting_pool(&ctx, Duration::ZERO).await;
    let pool = pool
        .options(fast())
        .size(2)
        .supervision(
            Supervision::new(2, Duration::from_secs(60))
                .backoff(Duration::from_millis(20), Duration::from_millis(50)),
        )
        .build()
        .await
        .unwrap();
    let mut events = pool.events();
    for round in 0..3 {
        // Another user closes the worker's backend under it: its loop ends on its own.
        let victim = pool.workers().await.remove(0);
        victim.queue().backend().close(false).await.unwrap();
        let stopped = victim.stopped().await.unwrap_err();
        assert!(stopped.to_string().contains("closed"), "{stopped}");
        if round < 2 {
            next_event(&mut events, "a restart", WAIT, |e| {
                matches!(e, PoolEvent::Restarting { .. })
            })
            .await;
            next_event(&mut events, "restarted", WAIT, |e| {
                matches!(e, PoolEvent::Started { .. })
            })
            .await;
            eventually("both places filled", WAIT, || async {
                pool.workers().await.len() == 2
            })
            .await;
            assert_eq!(pool.health().await.recent_restarts, round + 1);
        }
    }
    next_event(&mut events, "the pool failed", WAIT, |e| {
        matches!(e, PoolEvent::Failed { .. })
    })
    .await;
    let health = pool.health().await;
    assert_eq!(health.state, RunState::Failed);
    assert!(!health.is_live() && !health.is_ready());
    assert!(pool.failure().is_some());
    // The place that kept failing is given up; the other worker still processes.
    eventually("one worker left", WAIT, || async {
        pool.workers().await.len() == 1
    })
    .await;
    let id = ctx.add_with("still", JobOptions::new()).await;
    ctx.wait_state(&id, JobState::Completed).await;
    assert_eq!(runs.lock().unwrap().get(id.as_str()), Some(&1));
    pool.close().await;
}

pub async fn cancel_job_and_cancel_all_reach_the_processor_with_a_reason<S: Store>() {
    let ctx = Ctx::<S>::new("cancel").await;
    let worker = ctx
        .worker(
            fast().concurrency(3),
            |job: ActiveJob<S::B>, cancel| async move {
                cancel.cancelled().await;
                Err(match job.cancel_reason() {
                    Some(CancelReason::Requested(reason)) => JobError::unrecoverable(format!(
                        "cancelled: {}",
                        reason.unwrap_or_default()
                    )),
                    other => JobError::unrecoverable(format!("unexpected: {other:?}")),
                })
            },
        )
        .await;
    let a = ctx.add_with("a", JobOptions::new()).await;
    let b = ctx.add_with("b", JobOptions::new()).await;
    let c = ctx.add_with("c", JobOptions::new()).await;
    eventually("three active", WAIT, || async {
        ctx.count_in(JobState::Active).await == 3
    })
    .await;
    assert!(!worker.cancel_job(&JobId::custom("not-here").unwrap(), None));
    // A job is tracked once its processor starts, right after it turned active.
    eventually("job a cancelled", WAIT, || async {
        worker.cancel_job(&a, Some("user asked"))
    })
    .await;
    ctx.wait_state(&a, JobState::Failed).await;
    assert_eq!(
        ctx.job(&a).await.failed_reason.as_deref(),
        Some("cancelled: user asked")
    );
    worker.cancel_all_jobs(Some("shutting down"));
    for id in [&b, &c] {
        ctx.wait_state(id, JobState::Failed).await;
        assert_eq!(
            ctx.job(id).await.failed_reason.as_deref(),
            Some("cancelled: shutting down")
        );
    }
    worker.close().await;
}

pub async fn renewed_locks_are_reported<S: Store>() {
    let ctx = Ctx::<S>::new("renewed").await;
    let opts = fast().lock_duration(Duration::from_millis(1000));
    // Each job works longer than the lock.
    let worker = ctx
        .worker(opts, working_for(Duration::from_millis(1500)))
        .await;
    let mut rx = worker.events();
    let id = ctx.add_with("long", JobOptions::new()).await;
    next_event(
        &mut rx,
        "locks renewed",
        WAIT,
        |e| matches!(e, WorkerEvent::LocksRenewed { job_ids } if job_ids.contains(&id)),
    )
    .await;
    ctx.wait_state(&id, JobState::Completed).await;
    worker.close().await;
}

pub async fn boxed_processors_of_different_types_share_a_collection<S: Store>() {
    let ctx = Ctx::<S>::new("boxed").await;
    let other = ctx.other("boxed-images").await;
    let emails = BoxProcessor::new(|_job: ActiveJob<S::B>, _: CancellationToken| async {
        Ok(json!("sent"))
    });
    let images = BoxProcessor::new(|job: ActiveJob<S::B>, _: CancellationToken| async move {
        Ok(json!({ "resized": job.name.clone() }))
    });
    let mut workers: Vec<Worker<S::B, BoxProcessor<S::B>>> = Vec::new();
    for (queue, processor) in [(&ctx.queue, emails), (&other, images)] {
        let queue = Queue::try_new(queue.name().clone(), queue.backend().clone())
            .expect("the backend is bound to this queue");
        workers.push(
            Worker::builder(queue, processor)
                .options(fast())
                .build()
                .await
                .unwrap(),
        );
    }
    let mail = ctx.add_with("mail", JobOptions::new()).await;
    let image = other
        .add("img", &json!({}), JobOptions::new())
        .await
        .unwrap()
        .id;
    ctx.wait_state(&mail, JobState::Completed).await;
    assert_eq!(
        ctx.job(&mail).await.return_value.as_deref(),
        Some("\"sent\"")
    );
    eventually("the image job completed", WAIT, || async {
        other.get_job_state(&image).await.unwrap() == Some(JobState::Completed)
    })
    .await;
    let done = other.get_job(&image).await.unwrap().unwrap();
    assert_eq!(done.return_value.as_deref(), Some("{\"resized\":\"img\"}"));
    for worker in &workers {
        worker.close().await;
    }
}

pub async fn a_pool_autoscales_up_under_a_backlog_and_down_when_idle<S: Store>() {
    use bullmq::pool::Autoscale;
    let ctx = Ctx::<S>::new("autoscale").await;
    let (runs, pool) = counting_pool(&ctx, Duration::from_millis(20)).await;
    let pool = pool.options(fast().concurrency(2)).build().await.unwrap();
    let policy = Autoscale::new(1, 4)
        .jobs_per_worker(10)
        .interval(Duration::from_millis(100))
        .cooldown(Duration::from_millis(500));
    let autoscaler = pool.autoscale(policy).unwrap();
    let ids = add_many(&ctx, 300).await;
    eventually("scaled up to the maximum", WAIT, || async {
        pool.size() == 4
    })
    .await;
    each_exactly_once(&ctx, &ids, &runs).await;
    eventually("scaled back down when idle", WAIT, || async {
        pool.size() == 1
    })
    .await;
    workers_listed(&ctx, 1).await;
    drop(autoscaler);
    let bad = pool.autoscale(Autoscale::new(0, 2)).unwrap_err();
    assert!(bad.to_string().contains("min: must be at least 1"), "{bad}");
    pool.close().await;
}
