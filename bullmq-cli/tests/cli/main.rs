//! The `bullmq` binary, run as operators run it, against the test Redis and PostgreSQL, on
//! queues filled by Rust and by Node.js BullMQ 6.7: its JSON output checked field by field,
//! and the store's state afterwards.

// Shared helpers are `pub` for the modules of this one binary.
#![allow(unreachable_pub)]
// A test fails by panicking: an unexpected error is a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod act;
mod bench;
mod bulk_retry;
mod cluster;
mod dashboard;
mod doctor;
mod errors;
mod events;
mod limits;
mod look;
mod migrate;
mod search;
mod support;
mod top;
