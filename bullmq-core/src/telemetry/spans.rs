//! The spans of the library's operations, one constructor each, named and kinded as Node.js
//! BullMQ + `bullmq-otel` name theirs (see [`attr`](super::attr) for the fields).

use tracing::Span;

/// A span of operation `$op` (a literal: tracing names are static) on queue `$queue`, with
/// every field the library may record on it declared up front (tracing records only
/// declared fields).
macro_rules! op_span {
    ($op:literal, $kind:literal, $op_type:expr, $queue:expr) => {
        tracing::info_span!(
            target: "bullmq",
            $op,
            otel.name = tracing::field::Empty,
            otel.kind = $kind,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
            messaging.system = "bullmq",
            messaging.destination.name = $queue,
            messaging.operation.type = $op_type,
            messaging.operation.name = $op,
            messaging.message.id = tracing::field::Empty,
            messaging.batch.message_count = tracing::field::Empty,
            bullmq.queue.name = $queue,
            bullmq.queue.operation = $op,
            bullmq.job.name = tracing::field::Empty,
            bullmq.job.id = tracing::field::Empty,
            bullmq.job.attempts.made = tracing::field::Empty,
            bullmq.job.state = tracing::field::Empty,
            bullmq.job.failed.reason = tracing::field::Empty,
            bullmq.job.duration_ms = tracing::field::Empty,
            bullmq.job.delay_ms = tracing::field::Empty,
            bullmq.job.bulk.count = tracing::field::Empty,
            bullmq.job.scheduler.id = tracing::field::Empty,
            bullmq.flow.name = tracing::field::Empty,
            bullmq.worker.name = tracing::field::Empty,
            bullmq.worker.id = tracing::field::Empty,
            bullmq.worker.stalled.jobs = tracing::field::Empty,
            bullmq.worker.failed.jobs = tracing::field::Empty,
            bullmq.worker.jobs.to.extend.locks = tracing::field::Empty,
        )
    };
}

/// Names `span` as Node does (`<operation> <destination>`); the name is built only when the
/// span is recorded.
fn named(span: Span, op: &str, destination: impl std::fmt::Display) -> Span {
    if !span.is_disabled() {
        span.record("otel.name", format!("{op} {destination}"));
    }
    span
}

/// Records the job's identity on `span` (Node's `setSpanJobAttributes`).
pub fn record_job(span: &Span, id: &str, name: &str) {
    if !span.is_disabled() {
        span.record("messaging.message.id", id);
        span.record("bullmq.job.id", id);
        span.record("bullmq.job.name", name);
    }
}

/// Marks `span` failed with `reason` (OpenTelemetry status `ERROR`).
pub(crate) fn record_error(span: &Span, reason: &str) {
    if !span.is_disabled() {
        span.record("otel.status_code", "error");
        span.record("otel.status_description", reason);
        span.record("bullmq.job.failed.reason", reason);
    }
}

/// `add <queue>.<job name>`, a producer span.
pub(crate) fn add(queue: &str, job_name: &str) -> Span {
    let span = op_span!("add", "producer", "send", queue);
    if !span.is_disabled() {
        span.record("bullmq.job.name", job_name);
    }
    named(span, "add", format_args!("{queue}.{job_name}"))
}

/// `addBulk <queue>`, a producer span.
pub(crate) fn add_bulk(queue: &str, count: usize) -> Span {
    let span = op_span!("addBulk", "producer", "send", queue);
    if !span.is_disabled() {
        span.record("bullmq.job.bulk.count", count);
        span.record("messaging.batch.message_count", count);
    }
    named(span, "addBulk", queue)
}

/// `add <queue>.<job name>` of a job scheduler's upsert, a producer span.
pub fn scheduler_add(queue: &str, job_name: &str, scheduler_id: &str) -> Span {
    let span = add(queue, job_name);
    if !span.is_disabled() {
        span.record("bullmq.job.scheduler.id", scheduler_id);
    }
    span
}

/// `addFlow <queue>`, a producer span around a whole flow.
pub fn add_flow(queue: &str, flow_name: &str) -> Span {
    let span = op_span!("addFlow", "producer", "send", queue);
    if !span.is_disabled() {
        span.record("bullmq.flow.name", flow_name);
    }
    named(span, "addFlow", queue)
}

/// `addBulkFlows`, a producer span around several flows (Node names it with no queue).
pub fn add_bulk_flows() -> Span {
    let span = op_span!("addBulkFlows", "producer", "send", "");
    if !span.is_disabled() {
        span.record("otel.name", "addBulkFlows");
    }
    span
}

/// `addNode <queue>`, a producer span per job of a flow.
pub fn add_node(queue: &str, job_name: &str) -> Span {
    let span = op_span!("addNode", "producer", "send", queue);
    if !span.is_disabled() {
        span.record("bullmq.job.name", job_name);
    }
    named(span, "addNode", queue)
}

/// `process <queue>`, the consumer span of one processing attempt, from taken to finished.
pub(crate) fn process(queue: &str, worker_name: Option<&str>, worker_id: &str) -> Span {
    let span = op_span!("process", "consumer", "process", queue);
    if !span.is_disabled() {
        if let Some(name) = worker_name {
            span.record("bullmq.worker.name", name);
        }
        span.record("bullmq.worker.id", worker_id);
    }
    named(span, "process", queue)
}

/// How an attempt is settled, each Node's operation name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settle {
    /// `complete`.
    Complete,
    /// `fail`: failed for good.
    Fail,
    /// `retry`: back to wait at once.
    Retry,
    /// `delay`: retried after a backoff.
    Delay,
}

impl Settle {
    /// Node's operation name.
    pub(crate) fn op(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Fail => "fail",
            Self::Retry => "retry",
            Self::Delay => "delay",
        }
    }
}

/// `<complete|fail|retry|delay> <queue>`, the internal span of an attempt's finishing move.
pub(crate) fn settle(queue: &str, how: Settle) -> Span {
    let span = match how {
        Settle::Complete => op_span!("complete", "internal", "settle", queue),
        Settle::Fail => op_span!("fail", "internal", "settle", queue),
        Settle::Retry => op_span!("retry", "internal", "settle", queue),
        Settle::Delay => op_span!("delay", "internal", "settle", queue),
    };
    named(span, how.op(), queue)
}

/// `moveStalledJobsToWait <queue>`, one run of the stalled-jobs check.
pub(crate) fn stalled_check(queue: &str, worker_name: Option<&str>, worker_id: &str) -> Span {
    let span = op_span!("moveStalledJobsToWait", "internal", "settle", queue);
    if !span.is_disabled() {
        if let Some(name) = worker_name {
            span.record("bullmq.worker.name", name);
        }
        span.record("bullmq.worker.id", worker_id);
    }
    named(span, "moveStalledJobsToWait", queue)
}

/// `extendLocks <queue>`, one lock renewal round.
pub(crate) fn extend_locks(queue: &str, count: usize) -> Span {
    let span = op_span!("extendLocks", "internal", tracing::field::Empty, queue);
    if !span.is_disabled() {
        span.record("bullmq.worker.jobs.to.extend.locks", count);
    }
    named(span, "extendLocks", queue)
}

/// `<pause|resume|drain|rateLimit> <queue>`, the queue controls Node traces.
pub(crate) fn control(queue: &str, op: Control) -> Span {
    let span = match op {
        Control::Pause => op_span!("pause", "internal", tracing::field::Empty, queue),
        Control::Resume => op_span!("resume", "internal", tracing::field::Empty, queue),
        Control::Drain => op_span!("drain", "internal", tracing::field::Empty, queue),
        Control::RateLimit => op_span!("rateLimit", "internal", tracing::field::Empty, queue),
    };
    named(span, op.op(), queue)
}

/// The queue controls that get a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    /// `pause`.
    Pause,
    /// `resume`.
    Resume,
    /// `drain`.
    Drain,
    /// `rateLimit`.
    RateLimit,
}

impl Control {
    fn op(self) -> &'static str {
        match self {
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Drain => "drain",
            Self::RateLimit => "rateLimit",
        }
    }
}
