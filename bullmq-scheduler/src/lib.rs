//! `JobScheduler` for bullmq: cron and every-N schedules compatible with Node.js BullMQ.
//!
//! Status: the crate exists so the workspace has its final shape; the scheduler itself is
//! built on the `bullmq_core::backend` contract in a later milestone (see README.md).
#![forbid(unsafe_code)]
