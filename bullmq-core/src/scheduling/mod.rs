//! Job schedulers: the one home of scheduling.
//!
//! A job scheduler (Node.js BullMQ's `upsertJobScheduler`) produces one job per iteration;
//! whoever takes that job adds the next one. Both sides plan iterations here, so that a
//! producer's upsert and a worker's advance agree to the millisecond:
//!
//! - [`RepeatOptions`]: a schedule (cron `pattern` or `every`), also carried in the `repeat`
//!   options of the jobs it produces;
//! - [`next_cron_millis`]: a cron pattern's next run, as Node's default repeat strategy finds
//!   it (with the `bullmq-cron` crate, cron-parser's semantics);
//! - [`plan_iteration`], [`plan_iteration_with`]: when the next iteration runs and the options
//!   of its job;
//! - advancing a scheduler when one of its jobs is taken, which the
//!   [`Worker`](crate::worker::Worker) does before the job runs, as Node's worker does, with
//!   an optional [`RepeatStrategy`].
//!
//! # Why here, and not in `bullmq-scheduler`
//!
//! The worker advances schedulers, and the worker lives in this crate; the user-facing
//! `JobScheduler` (upsert, get, list, remove) lives in `bullmq-scheduler`, which depends on
//! this crate. Putting the planning and the advance here keeps one owner without a
//! dependency cycle: `bullmq-scheduler` builds on this module and re-exports from it only.
//! The cron engine is the `bullmq-cron` crate; the `bullmq` facade re-exports it, once, as
//! `bullmq::cron`.

// `pub(crate)` so that `crate::__private` can hand the advance to `bullmq-scheduler`.
pub(crate) mod advance;
mod iteration;
mod next_run;

/// The schedule type lives with the other job options (it is a job's `repeat` option); it is
/// named here too, where schedulers are planned.
pub use crate::options::RepeatOptions;
pub use advance::RepeatStrategy;
pub use iteration::{IterationPlan, plan_iteration, plan_iteration_with};
pub use next_run::{next_cron_millis, truthy};
