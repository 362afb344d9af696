#![doc = include_str!("lib.md")]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use bullmq_core as core;
/// Cron patterns read exactly as Node.js's cron-parser 5 reads them (`bullmq-cron`).
pub use bullmq_core::cron;
pub use bullmq_core::options::{Backoff, Deduplication, KeepJobs, ParentOptions};
pub use bullmq_core::queue_events::{
    EventItem, EventSubscription, QueueEvent, QueueEvents, QueueEventsOptions, QueueEventsProducer,
    ReceivedEvent, WaitError,
};
pub use bullmq_core::worker::{
    ActiveJob, CancellationToken, JobError, ProcessResult, Processor, Worker, WorkerEvent,
    WorkerOptions,
};
pub use bullmq_core::{
    BulkJob, Error, Job, JobId, JobOptions, JobState, Prefix, Queue, QueueName, Result,
    ScriptError, ScriptErrorCode,
};

/// The Redis backend (feature `redis`, on by default).
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use bullmq_redis as redis;

/// The backend the enabled features choose: Redis when `redis` is on.
#[cfg(feature = "redis")]
pub type DefaultBackend = bullmq_redis::RedisBackend;

/// The PostgreSQL backend (feature `postgres`).
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use bullmq_postgres as postgres;

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
