//! The spans of the library's operations, one constructor each, named, kinded, parented and
//! attributed as Node.js BullMQ 6.7 with `bullmq-otel` 2 makes its own (see
//! [`attr`](super::attr) for the names). Numbers are recorded as `i64`, which the
//! tracing-to-OpenTelemetry bridge exports as integers (it writes `u64` as text); string
//! arrays and span events go through the OpenTelemetry API (feature `otel`, see
//! [`context`]). No span sets a status: Node's never do.

use tracing::Span;

use super::context;
use super::fields;

/// A span of operation `$op` (a literal: tracing names are static) on queue `$queue`, named
/// `$name` (a `Display` formatted only when a subscriber records the span), with every field
/// the library may record on it declared up front (tracing records only declared fields). The
/// job's and worker's fields are given at creation when known (`None` otherwise): a value given
/// then costs a subscriber nothing more, one recorded later is another call through it. The
/// messaging attributes get values only when [`settings::messaging_attributes`] is on; a field
/// without a value is not exported.
macro_rules! op_span {
    ($op:literal, $kind:literal, $op_type:expr, $queue:expr, $name:expr) => {
        op_span!(
            $op, $kind, $op_type, $queue, $name,
            job: (None::<&str>, None::<&str>),
            worker: (None::<&str>, None::<&str>)
        )
    };
    (@or) => { tracing::field::Empty };
    (@or $value:expr) => { $value };
    (
        $op:literal, $kind:literal, $op_type:expr, $queue:expr, $name:expr,
        job: ($id:expr, $job_name:expr),
        worker: ($worker_name:expr, $worker_id:expr)
        $(, processed: $processed:expr)?
    ) => {{
        let messaging = $crate::telemetry::settings::messaging_attributes();
        let id: Option<&str> = $id;
        tracing::info_span!(
            target: "bullmq",
            $op,
            otel.name = $name,
            otel.kind = $kind,
            messaging.system = messaging.then_some("bullmq"),
            messaging.destination.name = messaging.then_some($queue),
            messaging.operation.type = if messaging { $op_type } else { None },
            messaging.operation.name = messaging.then_some($op),
            messaging.message.id = if messaging { id } else { None },
            messaging.batch.message_count = tracing::field::Empty,
            bullmq.queue.name = $queue,
            bullmq.queue.operation = $op,
            bullmq.job.name = $job_name,
            bullmq.job.id = id,
            bullmq.job.attempts.made = tracing::field::Empty,
            bullmq.job.processed.timestamp = op_span!(@or $($processed)?),
            bullmq.job.attempt_finished_timestamp = tracing::field::Empty,
            bullmq.job.bulk.count = tracing::field::Empty,
            bullmq.job.bulk.names = tracing::field::Empty,
            bullmq.job.scheduler.id = tracing::field::Empty,
            bullmq.flow.name = tracing::field::Empty,
            bullmq.worker.name = $worker_name,
            bullmq.worker.id = $worker_id,
            bullmq.worker.stalled.jobs = tracing::field::Empty,
            bullmq.worker.jobs.to.extend.locks = tracing::field::Empty,
        )
    }};
}

/// A span of a rarely called operation (queue administration, a worker's pause, resume or
/// close): Node's two queue attributes, the messaging ones when on, and the operation's own
/// `fields` (each `name = value`, values as Node types them).
macro_rules! ctl_span {
    ($op:literal, $kind:literal, $queue:expr $(, $($field:ident).+ = $value:expr)* $(,)?) => {{
        let messaging = $crate::telemetry::settings::messaging_attributes();
        let queue: &str = $queue;
        tracing::info_span!(
            target: "bullmq",
            $op,
            otel.name = span_name!("{} {}", $op, queue),
            otel.kind = $kind,
            messaging.system = messaging.then_some("bullmq"),
            messaging.destination.name = messaging.then_some(queue),
            messaging.operation.name = messaging.then_some($op),
            bullmq.queue.name = queue,
            bullmq.queue.operation = $op,
            $($($field).+ = $value,)*
        )
    }};
}

/// A worker's own operation: an internal control span that names the worker (its id, and its
/// name when it has one), as every span of Node's `Worker` does.
macro_rules! worker_span {
    ($op:literal, $queue:expr, $worker_name:expr, $worker_id:expr $(, $($field:ident).+ = $value:expr)* $(,)?) => {
        ctl_span!(
            $op,
            "internal",
            $queue,
            bullmq.worker.id = $worker_id,
            bullmq.worker.name = $worker_name,
            $($($field).+ = $value,)*
        )
    };
}

/// Node's span name (`<operation> <destination>`), formatted only if a subscriber records it.
macro_rules! span_name {
    ($($arg:tt)*) => {
        tracing::field::display(format_args!($($arg)*))
    };
}

/// A count or a time as the bridge exports a number: `i64` (saturating).
#[inline]
fn num<T: TryInto<i64>>(value: T) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// Records the job's identity on `span` (Node's `setSpanJobAttributes`).
pub fn record_job(span: &Span, id: &str, name: &str) {
    let message = super::settings::messaging_attributes().then_some(id);
    fields::record(
        span,
        [
            (fields::MESSAGE_ID, &message),
            (fields::JOB_ID, &id),
            (fields::JOB_NAME, &name),
        ],
    );
}

/// Records the id the store gave the job of an `add` span (its name was given at creation),
/// or of a scheduler's `add` span (which has no job name in Node).
pub fn record_job_id(span: &Span, id: &str) {
    static ID: fields::Cached<2> = fields::Cached::new([fields::MESSAGE_ID, fields::JOB_ID]);
    let message = super::settings::messaging_attributes().then_some(id);
    ID.record(span, [&message, &id]);
}

/// `add <queue>.<job name>`, a producer span.
pub(crate) fn add(queue: &str, job_name: &str) -> Span {
    op_span!(
        "add", "producer", Some("send"), queue, span_name!("add {queue}.{job_name}"),
        job: (None, Some(job_name)),
        worker: (None::<&str>, None::<&str>)
    )
}

/// `addBulk <queue>`, a producer span: the jobs' names (a string array) and their count.
pub(crate) fn add_bulk<'a>(queue: &str, names: impl ExactSizeIterator<Item = &'a str>) -> Span {
    let count = names.len();
    let span = op_span!(
        "addBulk",
        "producer",
        Some("send"),
        queue,
        span_name!("addBulk {queue}")
    );
    if span.is_disabled() {
        return span;
    }
    let batch = super::settings::messaging_attributes().then_some(num(count));
    fields::record(
        &span,
        [
            (fields::BULK_COUNT, &num(count)),
            (fields::BATCH_COUNT, &batch),
        ],
    );
    let names: Vec<&str> = names.collect();
    if !context::set_string_array(&span, super::attr::BULK_NAMES, &names) {
        span.record(
            super::attr::BULK_NAMES,
            tracing::field::display(JsonStrings(&names)),
        );
    }
    span
}

/// `add <queue>.<job name>` of a job scheduler's upsert, a producer span; the job's id is
/// recorded once known ([`record_job_id`]).
pub fn scheduler_add(queue: &str, job_name: &str, scheduler_id: &str) -> Span {
    let span = op_span!(
        "add", "producer", Some("send"), queue, span_name!("add {queue}.{job_name}"),
        job: (None, None::<&str>),
        worker: (None::<&str>, None::<&str>)
    );
    fields::record(&span, [(fields::SCHEDULER_ID, &scheduler_id)]);
    span
}

/// `addFlow <queue>`, a producer span around a whole flow.
pub fn add_flow(queue: &str, flow_name: &str) -> Span {
    let span = op_span!(
        "addFlow",
        "producer",
        Some("send"),
        queue,
        span_name!("addFlow {queue}")
    );
    fields::record(&span, [(fields::FLOW_NAME, &flow_name)]);
    span
}

/// `addBulkFlows`, a producer span around several flows (Node names it with no queue): their
/// count and their root names joined by commas (a string, as Node sets it).
pub fn add_bulk_flows(names: &[&str]) -> Span {
    let span = op_span!("addBulkFlows", "producer", Some("send"), "", "addBulkFlows");
    if !span.is_disabled() {
        let joined = names.join(",");
        fields::record(
            &span,
            [
                (fields::BULK_COUNT, &num(names.len())),
                (fields::BULK_NAMES, &joined.as_str()),
            ],
        );
    }
    span
}

/// `addNode <queue>`, a producer span per job of a flow, with the job's name and id.
pub fn add_node(queue: &str, job_name: &str, job_id: &str) -> Span {
    op_span!(
        "addNode", "producer", Some("send"), queue, span_name!("addNode {queue}"),
        job: (Some(job_id), Some(job_name)),
        worker: (None::<&str>, None::<&str>)
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
        "process", "consumer", Some("process"), queue, span_name!("process {queue}"),
        job: (Some(job.id.as_str()), Some(job.name.as_str())),
        worker: (worker_name, Some(worker_id)),
        processed: job.processed_on.map(num)
    )
}

/// Whether `span` is exported to OpenTelemetry, which is when an attempt's span gets its
/// events: checked once per attempt, so that without an OpenTelemetry layer an attempt pays
/// for no event.
pub(crate) fn is_exported(span: &Span) -> bool {
    context::is_exported(span)
}

/// Records on the current span (an attempt's `process` span) a completed attempt's `job
/// completed` event with the result (JSON text), as Node's `handleCompleted` adds it.
pub(crate) fn record_completed(result: &str) {
    context::add_current_event("job completed", [(super::attr::JOB_RESULT, result)]);
}

/// Records on the current span (an attempt's `process` span) a failed attempt's (retried or
/// not) `job failed` event with the reason, as Node's `handleFailed` adds it.
pub(crate) fn record_failed(reason: &str) {
    context::add_current_event("job failed", [(super::attr::JOB_FAILED_REASON, reason)]);
}

/// Records on the current span (an attempt's `process` span) when the attempt ended (Unix ms),
/// however it ended, as Node's worker does in its `finally`, and, for an attempt completed or
/// failed, the attempts made, this one included (Node sets it after the move).
pub(crate) fn record_attempt_end(finished: u64, attempts_made: Option<u32>) {
    fields::record_current([
        (fields::FINISHED_TIMESTAMP, &num(finished)),
        (fields::ATTEMPTS_MADE, &attempts_made.map(num)),
    ]);
}

/// Records on the current span (an attempt's `process` span) the error a failed attempt ended
/// with, as Node 6.7.6's `handleFailed` does with `span.recordException(err)`: an `exception`
/// event with the error's type, message and stack.
pub(crate) fn record_attempt_exception(kind: &str, message: &str, stack: &str) {
    context::add_current_event(
        "exception",
        [
            ("exception.type", kind),
            ("exception.message", message),
            ("exception.stacktrace", stack),
        ],
    );
}

/// Records on the current span a failure the worker went on after (Node's
/// `span.recordException(err.message)`): an `exception` event with `exception.message`.
pub(crate) fn record_current_exception(message: &str) {
    context::add_current_event("exception", [("exception.message", message)]);
}

/// Records on `span` the error its operation ended with (Node's `trace` records what its
/// callback threw): an `exception` event with `exception.type` and `exception.message`.
pub(crate) fn record_exception(span: &Span, message: &str) {
    context::add_event(
        span,
        "exception",
        [("exception.type", "Error"), ("exception.message", message)],
    );
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

/// `<complete|fail|retry|delay> <queue>`, the internal span of an attempt's finishing move,
/// with the job's name and id.
pub(crate) fn settle(queue: &str, how: Settle, job: &crate::Job) -> Span {
    let (id, name) = (Some(job.id.as_str()), Some(job.name.as_str()));
    let none = None::<&str>;
    // A span's name must be a literal, so each operation gets its own `op_span!`.
    macro_rules! settle_span {
        ($op:literal) => {
            op_span!(
                $op, "internal", Some("settle"), queue, span_name!("{} {queue}", $op),
                job: (id, name), worker: (none, none)
            )
        };
    }
    match how {
        Settle::Complete => settle_span!("complete"),
        Settle::Fail => settle_span!("fail"),
        Settle::Retry => settle_span!("retry"),
        Settle::Delay => settle_span!("delay"),
    }
}

/// `moveStalledJobsToWait <queue>`, one run of the stalled-jobs check.
pub(crate) fn stalled_check(queue: &str, worker_name: Option<&str>, worker_id: &str) -> Span {
    op_span!(
        "moveStalledJobsToWait", "internal", Some("settle"), queue,
        span_name!("moveStalledJobsToWait {queue}"),
        job: (None, None::<&str>),
        worker: (worker_name, Some(worker_id))
    )
}

/// Records on a `moveStalledJobsToWait` span the jobs the check moved back to wait, as Node's
/// worker does: `bullmq.worker.stalled.jobs` is their ids (a string array on an
/// OpenTelemetry span, as Node sets it; elsewhere the same list as JSON text), and each id is a
/// `job stalled` event with `bullmq.job.id`.
pub(crate) fn record_stalled(span: &Span, ids: &[crate::JobId]) {
    if span.is_disabled() {
        return;
    }
    let ids: Vec<&str> = ids.iter().map(crate::JobId::as_str).collect();
    if !context::set_string_array(span, super::attr::WORKER_STALLED_JOBS, &ids) {
        span.record(
            super::attr::WORKER_STALLED_JOBS,
            tracing::field::display(JsonStrings(&ids)),
        );
    }
    for id in ids {
        context::add_event(span, "job stalled", [(super::attr::JOB_ID, id)]);
    }
}

/// Strings as a JSON array, written only when a subscriber records them.
struct JsonStrings<'a>(&'a [&'a str]);

impl std::fmt::Display for JsonStrings<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = serde_json::to_string(self.0).map_err(|_| std::fmt::Error)?;
        f.write_str(&text)
    }
}

/// `extendLocks <queue>`, one lock renewal round: the worker, and the ids of the jobs whose
/// locks it extends (a string array, as Node sets it).
pub(crate) fn extend_locks(
    queue: &str,
    worker_name: Option<&str>,
    worker_id: &str,
    ids: &[&str],
) -> Span {
    let span = op_span!(
        "extendLocks", "internal", None::<&str>, queue, span_name!("extendLocks {queue}"),
        job: (None, None::<&str>),
        worker: (worker_name, Some(worker_id))
    );
    if !span.is_disabled()
        && !context::set_string_array(&span, super::attr::WORKER_JOBS_TO_EXTEND_LOCKS, ids)
    {
        span.record(
            super::attr::WORKER_JOBS_TO_EXTEND_LOCKS,
            tracing::field::display(JsonStrings(ids)),
        );
    }
    span
}

/// The spans of the queue's administration, each as Node's `Queue` makes it.
pub(crate) mod queue {
    use tracing::Span;

    use super::num;

    /// `pause <queue>`.
    pub(crate) fn pause(queue: &str) -> Span {
        ctl_span!("pause", "internal", queue)
    }

    /// `resume <queue>`.
    pub(crate) fn resume(queue: &str) -> Span {
        ctl_span!("resume", "internal", queue)
    }

    /// `drain <queue>`, whether delayed jobs go too.
    pub(crate) fn drain(queue: &str, delayed: bool) -> Span {
        ctl_span!(
            "drain",
            "internal",
            queue,
            bullmq.queue.drain.delay = delayed
        )
    }

    /// `rateLimit <queue>`, the limit (ms).
    pub(crate) fn rate_limit(queue: &str, ms: u64) -> Span {
        ctl_span!(
            "rateLimit",
            "internal",
            queue,
            bullmq.queue.rate.limit = num(ms)
        )
    }

    /// `clean <queue>`; its grace, type, limit and count are recorded by [`record_clean`].
    pub(crate) fn clean(queue: &str) -> Span {
        ctl_span!(
            "clean",
            "internal",
            queue,
            bullmq.queue.grace = tracing::field::Empty,
            bullmq.job.type = tracing::field::Empty,
            bullmq.queue.clean.limit = tracing::field::Empty,
            bullmq.queue.clean.count = tracing::field::Empty,
        )
    }

    /// Records what a `clean` did, as Node sets it at its end: no limit is `Infinity`.
    pub(crate) fn record_clean(span: &Span, grace_ms: u64, state: &str, limit: u64, count: usize) {
        if span.is_disabled() {
            return;
        }
        span.record("bullmq.queue.grace", num(grace_ms));
        span.record("bullmq.job.type", state);
        if limit == u64::MAX {
            span.record("bullmq.queue.clean.limit", f64::INFINITY);
        } else {
            span.record("bullmq.queue.clean.limit", num(limit));
        }
        span.record("bullmq.queue.clean.count", num(count));
    }

    /// `obliterate <queue>` (its `pause` span inside).
    pub(crate) fn obliterate(queue: &str) -> Span {
        ctl_span!("obliterate", "internal", queue)
    }

    /// `retryJobs <queue>`, a producer span as in Node; `options` its options as JSON text.
    pub(crate) fn retry_jobs(queue: &str, options: &str) -> Span {
        ctl_span!(
            "retryJobs",
            "producer",
            queue,
            bullmq.queue.options = options
        )
    }

    /// `promoteJobs <queue>`; `options` its options as JSON text.
    pub(crate) fn promote_jobs(queue: &str, options: &str) -> Span {
        ctl_span!(
            "promoteJobs",
            "internal",
            queue,
            bullmq.queue.options = options
        )
    }

    /// `trimEvents <queue>`, the length kept.
    pub(crate) fn trim_events(queue: &str, max_length: u64) -> Span {
        ctl_span!(
            "trimEvents",
            "internal",
            queue,
            bullmq.queue.event.max.length = num(max_length)
        )
    }

    /// `remove <queue>`: the job and the options as JSON text (`{"removeChildren":…}`).
    pub(crate) fn remove(queue: &str, id: &str, remove_children: bool) -> Span {
        ctl_span!(
            "remove",
            "internal",
            queue,
            bullmq.job.id = id,
            bullmq.job.options =
                tracing::field::display(format_args!("{{\"removeChildren\":{remove_children}}}")),
        )
    }

    /// `updateJobProgress <queue>`: the job and the progress as JSON text.
    pub(crate) fn update_job_progress(queue: &str, id: &str, progress: &serde_json::Value) -> Span {
        ctl_span!(
            "updateJobProgress",
            "internal",
            queue,
            bullmq.job.id = id,
            bullmq.job.progress = tracing::field::display(progress),
        )
    }

    /// `removeDeduplicationKey <queue>`, the deduplication id.
    pub(crate) fn remove_deduplication_key(queue: &str, id: &str) -> Span {
        ctl_span!(
            "removeDeduplicationKey",
            "internal",
            queue,
            bullmq.job.deduplication.key = id
        )
    }
}

/// The spans of a worker's own operations, each as Node's `Worker` makes it.
pub(crate) mod worker {
    use tracing::Span;

    use super::num;

    /// `pause <queue>` of a worker.
    pub(crate) fn pause(queue: &str, name: Option<&str>, id: &str, do_not_wait: bool) -> Span {
        worker_span!(
            "pause",
            queue,
            name,
            id,
            bullmq.worker.do.not.wait.active = do_not_wait
        )
    }

    /// `resume <queue>` of a worker.
    pub(crate) fn resume(queue: &str, name: Option<&str>, id: &str) -> Span {
        worker_span!("resume", queue, name, id)
    }

    /// `close <queue>` of a worker, whether forced.
    pub(crate) fn close(queue: &str, name: Option<&str>, id: &str, force: bool) -> Span {
        worker_span!("close", queue, name, id, bullmq.worker.force.close = force)
    }

    /// `startStalledCheckTimer <queue>`, when a worker starts its stalled-jobs check.
    pub(crate) fn start_stalled_check_timer(queue: &str, name: Option<&str>, id: &str) -> Span {
        worker_span!("startStalledCheckTimer", queue, name, id)
    }

    /// `getNextJob <queue>`, a manual fetch: made after it, the job's producer its parent
    /// (as in Node), with the job's id when one was taken.
    pub(crate) fn get_next_job(
        queue: &str,
        name: Option<&str>,
        id: &str,
        block: bool,
        job_id: Option<&str>,
    ) -> Span {
        worker_span!(
            "getNextJob",
            queue,
            name,
            id,
            bullmq.worker.options = tracing::field::display(format_args!("{{\"block\":{block}}}")),
            bullmq.job.id = job_id,
        )
    }

    /// `rateLimit <queue>` of a worker (a processor's rate limit): the worker and the limit.
    pub(crate) fn rate_limit(queue: &str, id: &str, ms: u64) -> Span {
        ctl_span!(
            "rateLimit",
            "internal",
            queue,
            bullmq.worker.id = id,
            bullmq.worker.rate.limit = num(ms)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::fields;

    /// Every key finds its field at its position in each kind of operation span (all are made
    /// by `op_span!`).
    #[test]
    fn keys_match_the_declared_fields() {
        let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry());
        let spans = [
            super::add("q", "n"),
            super::add_bulk("q", ["a", "b"].into_iter()),
            super::add_bulk_flows(&["f"]),
            super::stalled_check("q", None, "w"),
            super::extend_locks("q", None, "w", &["1"]),
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
