#![doc = include_str!("lib.md")]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use bullmq_core::options::{
    Backoff, Deduplication, KeepJobs, ParentOptions, Telemetry, UnixMillis,
};
/// Workers run as a unit: scaled, supervised, closed together.
pub use bullmq_core::pool;
pub use bullmq_core::pool::{Autoscale, PoolEvent, Supervision, WorkerPool};
pub use bullmq_core::queue_events::{
    EventItem, EventSubscription, QueueEvent, QueueEvents, QueueEventsOptions, QueueEventsProducer,
    ReceivedEvent, WaitError,
};
pub use bullmq_core::scheduling::RepeatOptions;
/// Finding jobs by what they hold: the search rule of the command line and the dashboard.
pub use bullmq_core::search;
/// Graceful shutdown on `SIGTERM` / `SIGINT`.
pub use bullmq_core::shutdown;
pub use bullmq_core::shutdown::Shutdown;
/// Spans, trace context in jobs (feature `otel`), metrics and health.
pub use bullmq_core::telemetry;
/// The OpenTelemetry crates the `otel` feature is built against (`opentelemetry`,
/// `opentelemetry_sdk`, `tracing_opentelemetry`).
#[cfg(feature = "otel")]
pub use bullmq_core::telemetry::otel;
pub use bullmq_core::worker::{
    ActiveJob, BoxProcessor, CancelReason, CancellationToken, JobError, ProcessResult, Processor,
    ReturnValue, Typed, Worker, WorkerEvent, WorkerOptions, typed,
};
pub use bullmq_core::{
    BackendError, BackendErrorKind, BulkJob, CheckedJobs, DEFAULT_PREFIX, Error, FailOutcome, Job,
    JobFailure, JobId, JobOptions, JobRef, JobState, LIB_VERSION, Prefix, Queue, QueueMetaInfo,
    QueueName, Result, ScalingReport, ScalingReporter, ScriptError, ScriptErrorCode, TypedQueue,
};
/// Cron patterns read exactly as Node.js's cron-parser 5 reads them (`bullmq-cron`).
pub use bullmq_cron as cron;

/// Job options and their parts, as Node.js BullMQ's `JobsOptions` has them.
pub mod options {
    pub use bullmq_core::options::{
        Backoff, BackoffStrategy, Deduplication, InvalidInstant, InvalidOption, JobOptions,
        KeepJobs, KeyOrder, PRIORITY_LIMIT, ParentOptions, Problem, Telemetry, UnixMillis,
        ValidationError,
    };
    pub use bullmq_core::scheduling::RepeatOptions;

    /// Options as JSON, both ways, in either stored key style: [`KeyStyle::Long`] is
    /// `JSON.stringify(opts)` as Node.js writes it (`{"attempts":3,"removeOnComplete":true}`),
    /// the shape tools show and read.
    ///
    /// ```
    /// use bullmq::options::{KeyStyle, JobOptions, options_from_value, options_to_value};
    ///
    /// let value = serde_json::json!({"attempts": 3, "delay": 1000});
    /// let decoded = options_from_value(&value).unwrap();
    /// assert_eq!(decoded.options.attempts, Some(3));
    /// assert_eq!(options_to_value(&decoded.options, KeyStyle::Long), value);
    /// # let _ = JobOptions::default();
    /// ```
    pub use bullmq_core::codec::{DecodedOptions, KeyStyle, options_from_value, options_to_value};
}

/// Jobs as stored: the job, its id, its state, and what reading a stored job may fail with.
pub mod job {
    pub use bullmq_core::job::{
        FinishedState, Job, JobDecodeError, JobId, JobState, JobType, ParentRef, UnknownState,
    };
}

/// [`Error`] and the types it wraps, for matching on a failure's cause.
pub mod error {
    pub use bullmq_core::backend::ObliterateRefusal;
    pub use bullmq_core::codec::CodecError;
    pub use bullmq_core::error::{
        AddedJob, BackendError, BackendErrorKind, BulkAddError, Error, PayloadTooLarge, RefusedJob,
        Result, ScriptError, ScriptErrorCode, UnknownJobs, UnknownScriptCode,
    };
    pub use bullmq_core::job::JobDecodeError;
    pub use bullmq_core::options::ValidationError;
}

/// Injectable time: the system clock, or a manual one for tests.
pub use bullmq_core::clock;

/// The contract every store implements, one trait per section, with its argument and result
/// types.
///
/// Application code generic over the store names one bound, [`Backend`] (also at the crate
/// root and in the [`prelude`]): `async fn enqueue<B: bullmq::Backend>(queue: &Queue<B>)`.
/// The types some [`Queue`] and [`Worker`] methods take or return are at the crate root too
/// ([`Range`], [`LockToken`], [`RateLimiter`], [`DependencyKind`]). The section traits and
/// the rest of this module are for people who write a backend or call a store directly.
pub use bullmq_core::backend;
pub use bullmq_core::backend::{Backend, DependencyKind, LockToken, Range, RateLimiter};

/// JSON as a Node.js process writes and reads it: [`json::to_string`] writes a value as
/// `JSON.stringify` would (the text this crate stores), [`json::js_view`] gives the text of
/// what `JSON.parse` makes of a stored value (the key order a Node.js processor sees).
pub mod json {
    pub use bullmq_core::json::{JsFormatter, js_view, to_string};
}

/// The `chrono` crate this API takes dates from (schedule start and end dates, a job's
/// delay instant), re-exported so that its version always matches.
pub use chrono;

/// What most programs need, in one import: `use bullmq::prelude::*;`.
pub mod prelude {
    pub use crate::options::UnixMillis;
    pub use crate::{
        ActiveJob, Backend, Backoff, CancellationToken, Error, Job, JobError, JobId, JobOptions,
        JobState, KeepJobs, ProcessResult, Queue, QueueEvents, QueueEventsOptions, QueueName,
        Result, TypedQueue, Worker, WorkerOptions, typed,
    };
    #[cfg(any(feature = "redis", feature = "postgres"))]
    pub use crate::{AnyBackend, DefaultBackend, connect};
    #[cfg(feature = "flow")]
    pub use crate::{FlowJob, FlowProducer};
    #[cfg(feature = "scheduler")]
    pub use crate::{JobScheduler, JobTemplate, RepeatOptions};
}

/// Every public item of `bullmq-core`, as this crate exported it before its curated surface.
#[deprecated(
    since = "0.2.0",
    note = "import from the facade's own modules instead (`bullmq::options`, `bullmq::job`, \
            `bullmq::error`, `bullmq::backend`, `bullmq::json`, `bullmq::worker` items at the \
            root); see CHANGELOG.md, section Unreleased, for each path"
)]
pub mod core {
    pub use bullmq_core::*;
}

/// `url` with every password it may carry hidden (user information, `pass=`/`password=`
/// query parameters, libpq keywords), fit for a log line or an error message.
pub use bullmq_core::redact::redact_url;

/// The relay: fleet-wide publish/subscribe, as Node.js BullMQ 6.7's `Relay`. Experimental,
/// as upstream's: it follows upstream 6.7.6 and may change with it (docs/guides/relay.md).
pub use bullmq_core::relay;

#[cfg(any(feature = "redis", feature = "postgres"))]
mod any;
/// Choosing Redis or PostgreSQL at run time, by the URL (features `redis`, `postgres`).
#[cfg(any(feature = "redis", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "redis", feature = "postgres"))))]
pub use any::{AnyBackend, ConnectError, ConnectOptions, connect};

/// The Redis backend (feature `redis`, on by default).
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use bullmq_redis as redis;

/// The backend the enabled features choose: Redis when `redis` is on.
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub type DefaultBackend = bullmq_redis::RedisBackend;

/// The PostgreSQL backend (feature `postgres`).
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use bullmq_postgres as postgres;

/// The backend the enabled features choose: PostgreSQL when `postgres` is on without `redis`
/// (`--no-default-features --features postgres`).
#[cfg(all(feature = "postgres", not(feature = "redis")))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "postgres", not(feature = "redis")))))]
pub type DefaultBackend = bullmq_postgres::PostgresBackend;

/// Adding jobs inside the caller's own PostgreSQL transaction (feature `postgres`).
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use bullmq_postgres::AddInTransaction;

#[cfg(all(feature = "flow", feature = "postgres"))]
mod flow_transaction;
/// Adding a flow inside the caller's own PostgreSQL transaction (features `flow` and
/// `postgres`).
#[cfg(all(feature = "flow", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "flow", feature = "postgres"))))]
pub use flow_transaction::AddFlowInTransaction;

/// Flows of dependent jobs (feature `flow`).
#[cfg(feature = "flow")]
#[cfg_attr(docsrs, doc(cfg(feature = "flow")))]
pub use bullmq_flow as flow;
#[cfg(feature = "flow")]
#[cfg_attr(docsrs, doc(cfg(feature = "flow")))]
pub use bullmq_flow::{FlowJob, FlowOptions, FlowProducer, GetFlowOptions, JobNode};

/// Job schedulers (feature `scheduler`).
#[cfg(feature = "scheduler")]
#[cfg_attr(docsrs, doc(cfg(feature = "scheduler")))]
pub use bullmq_scheduler as scheduler;
#[cfg(feature = "scheduler")]
#[cfg_attr(docsrs, doc(cfg(feature = "scheduler")))]
pub use bullmq_scheduler::{JobScheduler, JobTemplate};
