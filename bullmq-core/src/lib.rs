#![doc = include_str!("lib.md")]
#![forbid(unsafe_code)]

pub mod backend;
pub mod clock;
pub mod codec;
pub mod error;
mod failed_attempt;
pub mod job;
pub mod json;
mod names;
pub mod options;
pub mod pool;
mod queue;
pub mod queue_events;
pub mod redact;
pub mod relay;
pub mod scheduling;
pub mod search;
pub mod shutdown;
pub mod telemetry;
pub mod url_form;
pub mod worker;

pub use error::{
    BackendError, BackendErrorKind, BulkAddError, Error, Result, ScriptError, ScriptErrorCode,
};
pub use failed_attempt::{FailOutcome, JobFailure};
pub use job::{Job, JobId, JobState};
pub use names::{DEFAULT_PREFIX, Prefix, QueueName};
pub use options::JobOptions;
pub use pool::{WorkerPool, WorkerPoolBuilder};
pub use queue::{
    BulkJob, CheckedJobs, DEFAULT_MAX_LEN_EVENTS, JobRef, LIB_VERSION, ProducerSettings, Queue,
    QueueMetaInfo, QueueMetaWriter, ScalingReport, ScalingReporter, TypedQueue,
};
pub use queue_events::{QueueEvents, QueueEventsOptions, QueueEventsProducer};
pub use shutdown::Shutdown;
pub use worker::Worker;

/// What the other bullmq crates reach and users should not: not part of the API, not covered
/// by semver.
#[doc(hidden)]
pub mod __private {
    /// `JobScheduler::advance` (in `bullmq-scheduler`) takes the worker's own step.
    pub use crate::scheduling::advance::advance_job_scheduler;
}
