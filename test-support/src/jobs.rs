//! Small things many tests say about jobs: a script's refusal code, a lock token, a failed
//! attempt's delay, the processor every flow test runs in both runtimes, and a queue full of
//! failed jobs.

use std::sync::Arc;
use std::time::Duration;

use bullmq_core::backend::{
    Backend, DelayArgs, DependencyKind, FieldUpdates, LockToken, WorkerSettings,
};
use bullmq_core::job::JobType;
use bullmq_core::worker::{ActiveJob, CancellationToken, JobError, ProcessResult, WorkerOptions};
use bullmq_core::{BulkJob, Error, JobOptions, JobState, Queue, ScriptErrorCode, Worker};

/// The code of a script refusal, or a panic naming what came instead.
pub fn script_code(err: &Error) -> ScriptErrorCode {
    match err {
        Error::Script(e) => e.code,
        other => panic!("expected a script refusal, got {other}"),
    }
}

/// A lock token.
pub fn token(t: &str) -> LockToken {
    LockToken::new(t)
}

/// A parent's four dependency lists in an order other than upstream's own (`failed` first), so
/// that counts read with it are seen to follow the order asked.
pub const DEPENDENCY_KINDS: [DependencyKind; 4] = [
    DependencyKind::Failed,
    DependencyKind::Processed,
    DependencyKind::Unprocessed,
    DependencyKind::Ignored,
];

/// What a worker holding lock `tok` sends when an attempt fails and is retried `delay` after
/// `timestamp`: the attempt counts and its reason is `retry later`; the next job is fetched
/// along when `fetch_next`.
pub fn retry_later(
    timestamp: u64,
    delay: Duration,
    tok: &str,
    worker: Arc<WorkerSettings>,
    fetch_next: bool,
) -> DelayArgs {
    DelayArgs {
        timestamp,
        delay,
        token: Some(token(tok)),
        skip_attempt: false,
        fields: FieldUpdates {
            failed_reason: Some("retry later".to_owned()),
            ..FieldUpdates::default()
        },
        worker,
        fetch_next,
    }
}

/// What every flow test's processor does, in Rust on each store and in Node
/// (`tests/node/flow-work.mjs`): a job whose name starts with `fail` fails with `boom <name>`;
/// any other returns its name with its children's values and ignored failures.
pub async fn standard_flow_processor<B: Backend>(
    job: ActiveJob<B>,
    _: CancellationToken,
) -> ProcessResult {
    if job.name.starts_with("fail") {
        return Err(JobError::failed(format!("boom {}", job.name)));
    }
    let children = job.get_children_values().await?;
    let ignored = job.get_ignored_children_failures().await?;
    Ok(serde_json::json!({"name": job.name, "children": children, "ignored": ignored}))
}

/// Adds `n` jobs to `queue` (in bulks of 1,000, data `{"i": i}`) and fails each once with a
/// worker of `concurrency` on `worker_backend`, waiting up to `within` for the last: the
/// failed jobs a bulk retry or clean is measured or tested on.
pub async fn fill_failed<B: Backend>(
    queue: &Queue<B>,
    worker_backend: B,
    n: u64,
    concurrency: usize,
    within: Duration,
) {
    let mut left = n;
    while left > 0 {
        let size = left.min(1000);
        let jobs = (0..size)
            .map(|i| BulkJob {
                name: "fail-me".to_owned(),
                data: serde_json::json!({"i": i}),
                opts: JobOptions::default(),
            })
            .collect();
        queue.add_bulk(jobs).await.unwrap();
        left -= size;
    }
    let worker = Worker::new(
        queue.name().clone(),
        worker_backend,
        WorkerOptions::new().concurrency(concurrency),
        |_, _| async { Err::<serde_json::Value, _>(JobError::failed("planned")) },
    )
    .await
    .unwrap();
    let failed = [JobType::State(JobState::Failed)];
    crate::eventually("every job fails", within, || async {
        queue.get_job_count_by_types(&failed).await.unwrap() == n
    })
    .await;
    worker.close().await;
}
