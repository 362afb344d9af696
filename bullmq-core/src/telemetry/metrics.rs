//! Metrics through the [`metrics`](https://docs.rs/metrics) facade: nothing is recorded until
//! the application installs a recorder (Prometheus, OpenTelemetry, statsd, …); each update then
//! builds its labels and looks its handle up in the recorder.
//!
//! Names are Node.js BullMQ's `MetricNames` where it has one (`bullmq.jobs.completed`,
//! `bullmq.job.duration`, …), with the same labels (`bullmq.queue.name`, `bullmq.job.name`,
//! `bullmq.job.state`, and `bullmq.queue.jobs.state` for sampled counts); the rest are this crate's. Durations are in milliseconds, as Node's, but for the oldest waiting age, in seconds as autoscalers read it.

use std::sync::Arc;
use std::time::Duration;

use metrics::{Label, SharedString, counter, gauge, histogram};

/// Jobs added (this crate's).
pub const JOBS_ADDED: &str = "bullmq.jobs.added";
/// Attempts completed (Node's `bullmq.jobs.completed`).
pub const JOBS_COMPLETED: &str = "bullmq.jobs.completed";
/// Jobs failed for good (Node's `bullmq.jobs.failed`).
pub const JOBS_FAILED: &str = "bullmq.jobs.failed";
/// Failed attempts retried at once (Node's `bullmq.jobs.retried`).
pub const JOBS_RETRIED: &str = "bullmq.jobs.retried";
/// Failed attempts retried after a backoff, and jobs a processor delayed (Node's
/// `bullmq.jobs.delayed`).
pub const JOBS_DELAYED: &str = "bullmq.jobs.delayed";
/// Jobs the stalled-jobs check moved back to wait (this crate's).
pub const JOBS_STALLED: &str = "bullmq.jobs.stalled";
/// Processing duration of an attempt, ms (Node's `bullmq.job.duration`).
pub const JOB_DURATION: &str = "bullmq.job.duration";
/// Time from added (or due, for a delayed job) to started, ms, of a job's first attempt only
/// (retries and restarts after a stall are not sampled) (this crate's).
pub const JOB_WAIT_TIME: &str = "bullmq.job.wait_time";
/// Jobs in progress in one worker (this crate's gauge).
pub const WORKER_ACTIVE_JOBS: &str = "bullmq.worker.active_jobs";
/// Jobs per state of a queue, sampled by `Queue::record_job_counts_metric` (Node's
/// `bullmq.queue.jobs`).
pub const QUEUE_JOBS: &str = "bullmq.queue.jobs";
/// Jobs a worker could start now (waiting + prioritized + delayed and due), set each time
/// `Queue::scaling_signals` reads them (this crate's gauge).
pub const QUEUE_BACKLOG: &str = "bullmq.queue.backlog";
/// How long the oldest ready job has waited, in seconds (0 when none waits), set with
/// [`QUEUE_BACKLOG`] (this crate's gauge).
pub const QUEUE_OLDEST_WAITING_AGE: &str = "bullmq.queue.oldest_waiting_age";
/// Jobs being processed in the whole queue, every worker and runtime, set with
/// [`QUEUE_BACKLOG`] (this crate's gauge).
pub const QUEUE_ACTIVE: &str = "bullmq.queue.active";
/// Rate-limit hits, with the delay recorded in [`RATE_LIMIT_DELAY`] (this crate's).
pub const RATE_LIMITED: &str = "bullmq.queue.rate_limited";
/// How long the queue was rate limited, ms (this crate's).
pub const RATE_LIMIT_DELAY: &str = "bullmq.queue.rate_limit.delay";
/// Places in a `WorkerPool` (this crate's gauge).
pub const POOL_WORKERS: &str = "bullmq.pool.workers";
/// Workers a `WorkerPool` restarted after they stopped on their own (this crate's).
pub const POOL_RESTARTS: &str = "bullmq.pool.restarts";
/// `WorkerPool`s that spent their restart budget (this crate's).
pub const POOL_FAILURES: &str = "bullmq.pool.failures";

/// Label: queue name.
pub const LABEL_QUEUE: &str = "bullmq.queue.name";
/// Label: job name.
pub const LABEL_JOB_NAME: &str = "bullmq.job.name";
/// Label: job state.
pub const LABEL_STATE: &str = "bullmq.job.state";
/// The label of [`QUEUE_JOBS`]: the state counted (Node's `bullmq.queue.jobs.state`).
pub const LABEL_QUEUE_JOBS_STATE: &str = "bullmq.queue.jobs.state";
/// Label: worker name (empty when unnamed).
pub const LABEL_WORKER: &str = "bullmq.worker.name";

/// How an attempt ended, for its counter and duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Completed,
    Failed,
    Retried,
    Delayed,
}

impl Outcome {
    pub(crate) fn state(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Retried => "retried",
            Self::Delayed => "delayed",
        }
    }

    fn counter(self) -> &'static str {
        match self {
            Self::Completed => JOBS_COMPLETED,
            Self::Failed => JOBS_FAILED,
            Self::Retried => JOBS_RETRIED,
            Self::Delayed => JOBS_DELAYED,
        }
    }
}

/// Milliseconds as a histogram sample.
#[allow(clippy::cast_precision_loss)] // durations far below 2^52 ms
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Counts `count` jobs named `name` added to `queue` in [`JOBS_ADDED`]: called by every way
/// this workspace adds jobs (`Queue::add`, `add_bulk`, flows, scheduler iterations), and by
/// an application that adds jobs through a backend directly.
pub fn record_added(queue: &str, name: &str, count: u64) {
    counter!(JOBS_ADDED, LABEL_QUEUE => queue.to_owned(), LABEL_JOB_NAME => name.to_owned())
        .increment(count);
}

/// The label one worker's per-job metrics share, its queue's name, made once per worker:
/// each job's labels then share it instead of copying the name twice per update.
#[derive(Debug, Clone)]
pub(crate) struct QueueLabel(Label);

impl QueueLabel {
    pub(crate) fn new(queue: &str) -> Self {
        Self(Label::new(
            LABEL_QUEUE,
            SharedString::from_shared(Arc::<str>::from(queue)),
        ))
    }
}

/// An attempt ended with `outcome` after `duration` of processing (Node records the duration
/// with every state).
pub(crate) fn attempt(queue: &QueueLabel, name: &str, outcome: Outcome, duration: Duration) {
    // The labels the `(name, value)` pairs made before, built once for both updates.
    let labels = vec![
        queue.0.clone(),
        // Shared, so the counter's copy of the labels does not copy the name again.
        Label::new(
            LABEL_JOB_NAME,
            SharedString::from_shared(Arc::<str>::from(name)),
        ),
        Label::from_static_parts(LABEL_STATE, outcome.state()),
    ];
    counter!(outcome.counter(), labels.clone()).increment(1);
    histogram!(JOB_DURATION, labels).record(ms(duration));
}

/// A job waited `wait` between added (or due) and its first start.
pub(crate) fn waited(queue: &QueueLabel, name: &str, wait: Duration) {
    let labels = vec![queue.0.clone(), Label::new(LABEL_JOB_NAME, name.to_owned())];
    histogram!(JOB_WAIT_TIME, labels).record(ms(wait));
}

/// `n` jobs recovered by a stalled-jobs check.
pub(crate) fn stalled(queue: &str, n: u64) {
    counter!(JOBS_STALLED, LABEL_QUEUE => queue.to_owned()).increment(n);
}

/// A worker's jobs in progress moved by `delta`.
pub(crate) fn active_jobs(queue: &str, worker: Option<&str>, delta: f64) {
    gauge!(
        WORKER_ACTIVE_JOBS,
        LABEL_QUEUE => queue.to_owned(),
        LABEL_WORKER => worker.unwrap_or_default().to_owned()
    )
    .increment(delta);
}

/// A processor rate limited the queue for `delay`.
pub(crate) fn rate_limited(queue: &str, delay: Duration) {
    counter!(RATE_LIMITED, LABEL_QUEUE => queue.to_owned()).increment(1);
    histogram!(RATE_LIMIT_DELAY, LABEL_QUEUE => queue.to_owned()).record(ms(delay));
}

/// A pool on `queue` now has `size` places.
#[allow(clippy::cast_precision_loss)] // a worker count
pub(crate) fn pool_size(queue: &str, size: usize) {
    gauge!(POOL_WORKERS, LABEL_QUEUE => queue.to_owned()).set(size as f64);
}

/// A pool on `queue` restarted a worker.
pub(crate) fn pool_restart(queue: &str) {
    counter!(POOL_RESTARTS, LABEL_QUEUE => queue.to_owned()).increment(1);
}

/// A pool on `queue` spent its restart budget.
pub(crate) fn pool_failed(queue: &str) {
    counter!(POOL_FAILURES, LABEL_QUEUE => queue.to_owned()).increment(1);
}

/// The sampled count of `state` jobs in `queue`.
#[allow(clippy::cast_precision_loss)] // a job count
pub(crate) fn queue_jobs(queue: &str, state: &str, count: u64) {
    gauge!(QUEUE_JOBS, LABEL_QUEUE => queue.to_owned(), LABEL_QUEUE_JOBS_STATE => state.to_owned())
        .set(count as f64);
}

/// The scaling signals just read for `queue`.
#[allow(clippy::cast_precision_loss)] // job counts
pub(crate) fn scaling_signals(queue: &str, s: &crate::backend::ScalingSignals) {
    let age = s.oldest_waiting_age.unwrap_or_default().as_secs_f64();
    gauge!(QUEUE_BACKLOG, LABEL_QUEUE => queue.to_owned()).set(s.backlog as f64);
    gauge!(QUEUE_OLDEST_WAITING_AGE, LABEL_QUEUE => queue.to_owned()).set(age);
    gauge!(QUEUE_ACTIVE, LABEL_QUEUE => queue.to_owned()).set(s.active as f64);
}
