//! The Redis backend of bullmq: one queue on one Redis, through Node.js BullMQ's own Lua
//! scripts, so that Rust and Node.js producers and workers share queues byte for byte.
//!
//! Status: adding jobs (one, in bulk, and flows) works; the other sections of
//! `bullmq_core::backend::Backend` follow (see README.md).
#![forbid(unsafe_code)]

mod backend;
mod error;
mod keys;
mod reply;
mod script;
pub mod scripts;

pub use backend::{RedisBackend, RedisOptions};
pub use error::RedisError;
pub use keys::QueueKeys;
