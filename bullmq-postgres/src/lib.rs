//! PostgreSQL backend for bullmq.
#![forbid(unsafe_code)]

pub mod sql;
