//! The spans of the library's operations, one constructor each, named and kinded as Node.js
//! BullMQ + `bullmq-otel` name theirs (see [`attr`](super::attr) for the fields).

use tracing::Span;

use super::fields::{self, Key};

/// A span of operation `$op` (a literal: tracing names are static) on queue `$queue`, named
/// `$name` (a `Display` formatted only when a subscriber records the span), with every field
/// the library may record on it declared up front (tracing records only declared fields). The
/// job's and worker's fields are given at creation when known, `Empty` otherwise: a value given
/// then costs a subscriber nothing more, one recorded later is another call through it.
macro_rules! op_span {
    ($op:literal, $kind:literal, $op_type:expr, $queue:expr, $name:expr) => {
        op_span!(
            $op, $kind, $op_type, $queue, $name,
            job: (tracing::field::Empty, tracing::field::Empty, tracing::field::Empty),
            worker: (tracing::field::Empty, tracing::field::Empty)
        )
    };
    (@or) => { tracing::field::Empty };
    (@or $value:expr) => { $value };
    (
        $op:literal, $kind:literal, $op_type:expr, $queue:expr, $name:expr,
        job: ($id:expr, $job_name:expr, $attempts:expr),
        worker: ($worker_name:expr, $worker_id:expr)
        $(, processed: $processed:expr)?
    ) => {
        tracing::info_span!(
            target: "bullmq",
            $op,
            otel.name = $name,
            otel.kind = $kind,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
            messaging.system = "bullmq",
            messaging.destination.name = $queue,
            messaging.operation.type = $op_type,
            messaging.operation.name = $op,
            messaging.message.id = $id,
            messaging.batch.message_count = tracing::field::Empty,
            bullmq.queue.name = $queue,
            bullmq.queue.operation = $op,
            bullmq.job.name = $job_name,
            bullmq.job.id = $id,
            bullmq.job.attempts.made = $attempts,
            bullmq.job.state = tracing::field::Empty,
            bullmq.job.failed.reason = tracing::field::Empty,
            bullmq.job.duration_ms = tracing::field::Empty,
            bullmq.job.delay_ms = tracing::field::Empty,
            bullmq.job.processed.timestamp = op_span!(@or $($processed)?),
            bullmq.job.attempt_finished_timestamp = tracing::field::Empty,
            bullmq.job.bulk.count = tracing::field::Empty,
            bullmq.job.scheduler.id = tracing::field::Empty,
            bullmq.flow.name = tracing::field::Empty,
            bullmq.worker.name = $worker_name,
            bullmq.worker.id = $worker_id,
            bullmq.worker.stalled.jobs = tracing::field::Empty,
            bullmq.worker.failed.jobs = tracing::field::Empty,
            bullmq.worker.jobs.to.extend.locks = tracing::field::Empty,
            bullmq.worker.rate.limit = tracing::field::Empty,
        )
    };
}

/// Node's span name (`<operation> <destination>`), formatted only if a subscriber records it.
macro_rules! span_name {
    ($($arg:tt)*) => {
        tracing::field::display(format_args!($($arg)*))
    };
}

/// Records the job's identity on `span` (Node's `setSpanJobAttributes`).
pub fn record_job(span: &Span, id: &str, name: &str) {
    fields::record(
        span,
        [
            (fields::MESSAGE_ID, &id),
            (fields::JOB_ID, &id),
            (fields::JOB_NAME, &name),
        ],
    );
}

/// Records the id the store gave the job of an `add` span (its name was given at creation).
pub(crate) fn record_job_id(span: &Span, id: &str) {
    static ID: fields::Cached<2> = fields::Cached::new([fields::MESSAGE_ID, fields::JOB_ID]);
    ID.record(span, [&id, &id]);
}

/// Records on the current span (an attempt's `process` span) the state an attempt left its
/// job in when it did not settle it (`rate_limited`, `waiting-children`).
pub(crate) fn record_state(state: &'static str) {
    fields::record_current([(fields::STATE, &state)]);
}

/// Records on the current span (an attempt's `process` span) how the attempt ended: its
/// state, duration (ms), end (Unix ms) and, once counted, the attempts made (a value of
/// `None` records nothing).
pub(crate) fn record_outcome(state: &'static str, duration_ms: u64, ended: u64, made: Option<u32>) {
    fields::record_current([
        (fields::STATE, &state),
        (fields::DURATION_MS, &duration_ms),
        (fields::FINISHED_TIMESTAMP, &ended),
        (fields::ATTEMPTS_MADE, &made),
    ]);
}

/// Marks the current span (an attempt's `process` span) failed with `reason`.
pub(crate) fn record_current_error(reason: &str) {
    fields::record_current(error_values(&reason));
}

/// Marks `span` failed with `reason` (OpenTelemetry status `ERROR`).
pub(crate) fn record_error(span: &Span, reason: &str) {
    fields::record(span, error_values(&reason));
}

/// The fields of a failure: OpenTelemetry's status and Node's `bullmq.job.failed.reason`.
fn error_values<'a>(reason: &'a &'a str) -> [(Key, &'a dyn tracing::Value); 3] {
    [
        (fields::STATUS_CODE, &"error"),
        (fields::STATUS_DESCRIPTION, reason),
        (fields::FAILED_REASON, reason),
    ]
}

/// `add <queue>.<job name>`, a producer span.
pub(crate) fn add(queue: &str, job_name: &str) -> Span {
    let none = tracing::field::Empty;
    op_span!(
        "add", "producer", "send", queue, span_name!("add {queue}.{job_name}"),
        job: (none, job_name, none),
        worker: (none, none)
    )
}

/// `addBulk <queue>`, a producer span.
pub(crate) fn add_bulk(queue: &str, count: usize) -> Span {
    let span = op_span!(
        "addBulk",
        "producer",
        "send",
        queue,
        span_name!("addBulk {queue}")
    );
    fields::record(
        &span,
        [(fields::BULK_COUNT, &count), (fields::BATCH_COUNT, &count)],
    );
    span
}

/// `add <queue>.<job name>` of a job scheduler's upsert, a producer span.
pub fn scheduler_add(queue: &str, job_name: &str, scheduler_id: &str) -> Span {
    let span = add(queue, job_name);
    fields::record(&span, [(fields::SCHEDULER_ID, &scheduler_id)]);
    span
}

/// `addFlow <queue>`, a producer span around a whole flow.
pub fn add_flow(queue: &str, flow_name: &str) -> Span {
    let span = op_span!(
        "addFlow",
        "producer",
        "send",
        queue,
        span_name!("addFlow {queue}")
    );
    fields::record(&span, [(fields::FLOW_NAME, &flow_name)]);
    span
}

/// `addBulkFlows`, a producer span around several flows (Node names it with no queue).
pub fn add_bulk_flows() -> Span {
    op_span!("addBulkFlows", "producer", "send", "", "addBulkFlows")
}

/// `addNode <queue>`, a producer span per job of a flow.
pub fn add_node(queue: &str, job_name: &str) -> Span {
    let none = tracing::field::Empty;
    op_span!(
        "addNode", "producer", "send", queue, span_name!("addNode {queue}"),
        job: (none, job_name, none),
        worker: (none, none)
    )
}

/// `process <queue>`, the consumer span of one processing attempt, from taken to finished.
pub(crate) fn process(
    queue: &str,
    job: &crate::Job,
    worker_name: Option<&str>,
    worker_id: &str,
) -> Span {
    op_span!(
        "process", "consumer", "process", queue, span_name!("process {queue}"),
        job: (job.id.as_str(), job.name.as_str(), job.attempts_made),
        worker: (worker_name, worker_id),
        processed: job.processed_on
    )
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

/// `<complete|fail|retry|delay> <queue>`, the internal span of an attempt's finishing move;
/// `attempts` counts this attempt.
pub(crate) fn settle(queue: &str, how: Settle, job: &crate::Job) -> Span {
    let attempts = job.attempts_made.saturating_add(1);
    let (id, name, none) = (job.id.as_str(), job.name.as_str(), tracing::field::Empty);
    match how {
        Settle::Complete => op_span!(
            "complete", "internal", "settle", queue, span_name!("complete {queue}"),
            job: (id, name, attempts), worker: (none, none)
        ),
        Settle::Fail => op_span!(
            "fail", "internal", "settle", queue, span_name!("fail {queue}"),
            job: (id, name, attempts), worker: (none, none)
        ),
        Settle::Retry => op_span!(
            "retry", "internal", "settle", queue, span_name!("retry {queue}"),
            job: (id, name, attempts), worker: (none, none)
        ),
        Settle::Delay => op_span!(
            "delay", "internal", "settle", queue, span_name!("delay {queue}"),
            job: (id, name, attempts), worker: (none, none)
        ),
    }
}

/// `moveStalledJobsToWait <queue>`, one run of the stalled-jobs check.
pub(crate) fn stalled_check(queue: &str, worker_name: Option<&str>, worker_id: &str) -> Span {
    let none = tracing::field::Empty;
    op_span!(
        "moveStalledJobsToWait", "internal", "settle", queue,
        span_name!("moveStalledJobsToWait {queue}"),
        job: (none, none, none),
        worker: (worker_name, worker_id)
    )
}

/// Records on a `moveStalledJobsToWait` span the jobs the check moved back to wait, as Node's
/// worker does: `bullmq.worker.stalled.jobs` is their ids (a string array on an
/// OpenTelemetry span, as Node sets it; elsewhere the same list as JSON text), and each id is a
/// `job stalled` event with `bullmq.job.id` (at `DEBUG`: one per job).
pub(crate) fn record_stalled(span: &Span, ids: &[crate::JobId]) {
    if span.is_disabled() {
        return;
    }
    if !super::context::set_string_array(span, super::attr::WORKER_STALLED_JOBS, ids) {
        span.record(
            super::attr::WORKER_STALLED_JOBS,
            tracing::field::display(JsonIds(ids)),
        );
    }
    for id in ids {
        tracing::event!(target: "bullmq", parent: span, tracing::Level::DEBUG, bullmq.job.id = id.as_str(), "job stalled");
    }
}

/// Job ids as a JSON array of strings, written only when a subscriber records them.
struct JsonIds<'a>(&'a [crate::JobId]);

impl std::fmt::Display for JsonIds<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.0.iter().map(crate::JobId::as_str).collect();
        let text = serde_json::to_string(&ids).map_err(|_| std::fmt::Error)?;
        f.write_str(&text)
    }
}

/// `extendLocks <queue>`, one lock renewal round.
pub(crate) fn extend_locks(queue: &str, count: usize) -> Span {
    let none = tracing::field::Empty;
    let span = op_span!(
        "extendLocks",
        "internal",
        none,
        queue,
        span_name!("extendLocks {queue}")
    );
    fields::record(&span, [(fields::EXTEND_LOCKS, &count)]);
    span
}

/// `<pause|resume|drain|rateLimit> <queue>`, the queue controls Node traces.
pub(crate) fn control(queue: &str, op: Control) -> Span {
    let none = tracing::field::Empty;
    match op {
        Control::Pause => op_span!(
            "pause",
            "internal",
            none,
            queue,
            span_name!("pause {queue}")
        ),
        Control::Resume => {
            op_span!(
                "resume",
                "internal",
                none,
                queue,
                span_name!("resume {queue}")
            )
        }
        Control::Drain => op_span!(
            "drain",
            "internal",
            none,
            queue,
            span_name!("drain {queue}")
        ),
        Control::RateLimit => {
            op_span!(
                "rateLimit",
                "internal",
                none,
                queue,
                span_name!("rateLimit {queue}")
            )
        }
    }
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

#[cfg(test)]
mod tests {
    use super::{Control, fields};

    /// Every key finds its field at its position in each kind of operation span (all are made
    /// by `op_span!`).
    #[test]
    fn keys_match_the_declared_fields() {
        let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry());
        let spans = [
            super::add("q", "n"),
            super::add_bulk("q", 2),
            super::add_bulk_flows(),
            super::stalled_check("q", None, "w"),
            super::control("q", Control::Drain),
        ];
        for key in fields::ALL {
            for span in &spans {
                assert!(
                    key.found_in(span),
                    "{} in {:?}",
                    key.name(),
                    span.metadata()
                );
            }
        }
    }
}
