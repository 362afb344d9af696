//! `JobScheduler` for bullmq: cron and every-N schedules compatible with Node.js BullMQ 6.7.0–6.7.6.
//!
//! This crate is the user-facing side only: [`JobScheduler`] upserts, reads, lists and
//! removes a queue's schedulers. Planning iterations, and advancing a scheduler when one of
//! its jobs is taken (which the worker does), live in
//! [`bullmq_core::scheduling`], the one home of scheduling; this crate re-exports from it what
//! a schedule is written with. Cron patterns are read by the `bullmq-cron` crate (re-exported
//! by the `bullmq` facade as `bullmq::cron`).
#![forbid(unsafe_code)]

mod scheduler;

pub use bullmq_core::scheduling::{RepeatOptions, next_cron_millis};
pub use scheduler::{
    JobScheduler, JobTemplate, ScheduledIteration, SchedulerError, validate_schedule,
};
