//! What our own harnesses (`redis_*` and `postgres_*`) share whatever the store: adding the
//! jobs in each mode of the add benchmark, pre-filling a queue, and the worker the worker
//! benchmark times. It names bullmq, so it is included by each of them with
//! `#[path = "support/ours.rs"] mod ours;` (not from `support/mod.rs`, which the official
//! port's harnesses include).

#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use bullmq::Processor;
use bullmq::backend::Backend;
use bullmq::{ActiveJob, BulkJob, CancellationToken, JobOptions, KeepJobs, ProcessResult};
use bullmq::{Queue, QueueName, Worker, WorkerOptions};

use crate::support::add::{Mode, concurrently};
use crate::support::instructions::Finish;
use crate::support::jobs::{CHUNK, Data, JOB_NAME, QUEUE};
use crate::support::worker;

/// How many replicas must confirm each add and finishing call, from `BENCH_WAIT_REPLICAS`
/// (`RedisOptions::wait_for_replicas`, with a 1 s timeout); unset or 0: none (the default).
#[cfg(feature = "redis")]
pub fn wait_for_replicas(options: bullmq::redis::RedisOptions) -> bullmq::redis::RedisOptions {
    let replicas: u32 = std::env::var("BENCH_WAIT_REPLICAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if replicas == 0 {
        options
    } else {
        options.wait_for_replicas(replicas, Duration::from_secs(1))
    }
}

/// A Redis backend for queue `queue` under a fresh key prefix starting with `harness`, and
/// that prefix (for the checks and the clean-up).
#[cfg(feature = "redis")]
pub async fn fresh_redis(
    url: &str,
    harness: &str,
    queue: &str,
) -> (String, bullmq::redis::RedisBackend) {
    let prefix = bullmq_test_support::unique_name(harness);
    let options =
        bullmq::redis::RedisOptions::new(url).prefix(bullmq::Prefix::new(&prefix).expect("prefix"));
    let backend =
        bullmq::redis::RedisBackend::connect(&options, QueueName::new(queue).expect("name"))
            .await
            .expect("connect to Redis");
    (prefix, backend)
}

/// The benchmarks' queue name.
pub fn queue_name() -> QueueName {
    QueueName::new(QUEUE).expect("queue name")
}

/// Adds `jobs` jobs in `mode`.
pub async fn add<B: Backend>(queue: Queue<B>, mode: Mode, jobs: u64) {
    match mode {
        Mode::Sequential => {
            for i in 0..jobs {
                queue
                    .add(JOB_NAME, &Data::new(i), JobOptions::default())
                    .await
                    .expect("add");
            }
        }
        Mode::Concurrent8 => {
            let queue = Arc::new(queue);
            concurrently(jobs, move |i| {
                let queue = Arc::clone(&queue);
                async move {
                    queue
                        .add(JOB_NAME, &Data::new(i), JobOptions::default())
                        .await
                        .expect("add");
                }
            })
            .await;
        }
        Mode::Bulk1000 => add_bulk(&queue, jobs, &JobOptions::default()).await,
    }
}

/// Adds `jobs` jobs with `opts`, `add_bulk` in chunks of [`CHUNK`].
pub async fn add_bulk<B: Backend>(queue: &Queue<B>, jobs: u64, opts: &JobOptions) {
    let mut start = 0;
    while start < jobs {
        let end = (start + CHUNK).min(jobs);
        let chunk = (start..end)
            .map(|i| BulkJob {
                name: JOB_NAME.to_owned(),
                data: Data::new(i),
                opts: opts.clone(),
            })
            .collect();
        queue.add_bulk(chunk).await.expect("add_bulk");
        start = end;
    }
}

/// Adds the worker benchmark's `jobs` jobs for `mode` through `backend` (removed on completion
/// when the mode says so), then closes it.
pub async fn fill<B: Backend>(backend: B, mode: worker::Mode, jobs: u64) {
    let queue = Queue::try_new(queue_name(), backend).expect("the backend is bound to this queue");
    let opts = if mode.remove {
        JobOptions::default().remove_on_complete(KeepJobs::RemoveAll)
    } else {
        JobOptions::default()
    };
    add_bulk(&queue, jobs, &opts).await;
    queue
        .backend()
        .close(false)
        .await
        .expect("close the filling queue");
}

/// The timed worker of `mode` on `backend`, not running yet (`autorun` off): its processor
/// sleeps the mode's work, or returns at once (telling `finish` first, when given).
pub async fn worker<B: Backend>(
    backend: B,
    mode: worker::Mode,
    finish: Option<Arc<Finish>>,
) -> Worker<B, impl Processor<B>> {
    let work = Duration::from_millis(mode.work_ms);
    let options = WorkerOptions::new()
        .concurrency(mode.concurrency)
        .autorun(false);
    Worker::new(
        queue_name(),
        backend,
        options,
        move |_job: ActiveJob<B>, _cancel: CancellationToken| {
            if let Some(finish) = &finish {
                finish.processed();
            }
            async move {
                if !work.is_zero() {
                    tokio::time::sleep(work).await;
                }
                ProcessResult::Ok(serde_json::Value::Null)
            }
        },
    )
    .await
    .expect("the worker")
}
