//! `JobScheduler` for bullmq: cron and every-N schedules compatible with Node.js BullMQ 6.7.0.
//!
//! - [`cron`]: cron patterns read exactly as Node.js's cron-parser 5 reads them (the
//!   `bullmq-cron` crate, which workers use too).
#![forbid(unsafe_code)]

pub use bullmq_core::cron;
pub mod scheduler;

pub use scheduler::{
    IterationPlan, JobScheduler, JobTemplate, ScheduledIteration, SchedulerError, next_cron_millis,
    plan_iteration, validate_schedule,
};
