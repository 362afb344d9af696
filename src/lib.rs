//! bullmq facade.
#![forbid(unsafe_code)]
pub use bullmq_core as core;
