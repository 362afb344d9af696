//! Attribute (span field) names: OpenTelemetry's messaging semantic conventions (only with
//! [`settings::set_messaging_attributes`](super::settings::set_messaging_attributes)), and the
//! `bullmq.*` names Node.js BullMQ 6.7.6 sets (its `TelemetryAttributes`).

/// Always `"bullmq"`.
pub const MESSAGING_SYSTEM: &str = "messaging.system";
/// The queue name.
pub const MESSAGING_DESTINATION: &str = "messaging.destination.name";
/// `send`, `process`, `settle`, … (the semantic conventions' operation types).
pub const MESSAGING_OPERATION_TYPE: &str = "messaging.operation.type";
/// The BullMQ operation (`add`, `process`, `complete`, …).
pub const MESSAGING_OPERATION_NAME: &str = "messaging.operation.name";
/// The job id.
pub const MESSAGING_MESSAGE_ID: &str = "messaging.message.id";

/// Node's `bullmq.queue.name`.
pub const QUEUE_NAME: &str = "bullmq.queue.name";
/// Node's `bullmq.queue.operation`.
pub const QUEUE_OPERATION: &str = "bullmq.queue.operation";
/// Node's `bullmq.job.name`.
pub const JOB_NAME: &str = "bullmq.job.name";
/// Node's `bullmq.job.id`.
pub const JOB_ID: &str = "bullmq.job.id";
/// Node's `bullmq.job.attempts.made`.
pub const JOB_ATTEMPTS_MADE: &str = "bullmq.job.attempts.made";
/// Node's `bullmq.job.state`: a metrics label (Node sets it on no span).
pub const JOB_STATE: &str = "bullmq.job.state";
/// Node's `bullmq.worker.name`.
pub const WORKER_NAME: &str = "bullmq.worker.name";
/// Node's `bullmq.worker.id`.
pub const WORKER_ID: &str = "bullmq.worker.id";
/// Node's `bullmq.job.bulk.count`.
pub const BULK_COUNT: &str = "bullmq.job.bulk.count";
/// Node's `bullmq.worker.rate.limit`: the delay a rate limit sets, ms.
pub const WORKER_RATE_LIMIT: &str = "bullmq.worker.rate.limit";
/// Node's `bullmq.worker.stalled.jobs`.
pub const WORKER_STALLED_JOBS: &str = "bullmq.worker.stalled.jobs";
/// Node's `bullmq.job.failed.reason`.
pub const JOB_FAILED_REASON: &str = "bullmq.job.failed.reason";
/// Node's `bullmq.job.scheduler.id`.
pub const JOB_SCHEDULER_ID: &str = "bullmq.job.scheduler.id";
/// Node's `bullmq.flow.name`.
pub const FLOW_NAME: &str = "bullmq.flow.name";
/// Node's `bullmq.job.processed.timestamp`: when the attempt started (Unix ms).
pub const JOB_PROCESSED_TIMESTAMP: &str = "bullmq.job.processed.timestamp";
/// Node's `bullmq.job.attempt_finished_timestamp`: when the attempt ended (Unix ms).
pub const JOB_ATTEMPT_FINISHED_TIMESTAMP: &str = "bullmq.job.attempt_finished_timestamp";
/// Node's `bullmq.job.bulk.names`: the job names of an `addBulk` (a string array), the root
/// names of an `addBulkFlows` (joined by commas).
pub const BULK_NAMES: &str = "bullmq.job.bulk.names";
/// Node's `bullmq.job.result`: a completed attempt's return value as JSON text, on its
/// `job completed` event.
pub const JOB_RESULT: &str = "bullmq.job.result";
/// Node's `bullmq.worker.jobs.to.extend.locks`: the ids whose locks a renewal extends.
pub const WORKER_JOBS_TO_EXTEND_LOCKS: &str = "bullmq.worker.jobs.to.extend.locks";
