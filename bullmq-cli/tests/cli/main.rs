//! The `bullmq` binary, run as operators run it, against the test Redis and PostgreSQL, on
//! queues filled by Rust and by Node.js BullMQ 6.7: its JSON output checked field by field,
//! and the store's state afterwards.

// Shared helpers are `pub` for the modules of this one binary.
#![allow(unreachable_pub)]

mod act;
mod bulk_retry;
mod errors;
mod events;
mod look;
mod support;
