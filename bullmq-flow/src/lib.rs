//! `FlowProducer` for bullmq: trees of dependent jobs that may span queues.
//!
//! Status: the crate exists so the workspace has its final shape; the producer itself is
//! built on the `bullmq_core::backend` contract in a later milestone (see README.md).
#![forbid(unsafe_code)]
