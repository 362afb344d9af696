//! What the PostgreSQL backend writes and reads row for row: each `Backend` section checked
//! against the rows upstream's SQL leaves (jobs made and moved with upstream's own commands, as
//! Node.js's `PostgresQueueBackend` runs them), Rust's adds compared with Node.js's twins, the
//! sessions' names and the event table under concurrent writers.
//!
//! The behaviour every store shares is the conformance suite's (`tests/conformance/backend/`
//! at the workspace root, one generic case per behaviour run on Redis and PostgreSQL); these
//! cases pin what only PostgreSQL has. One binary for all sections keeps link time and disk
//! down.

#![allow(clippy::unwrap_used)]

mod support;

mod add;
mod admin;
mod blocking;
mod events;
mod meta;
mod mutations;
mod queries;
mod schedulers;
mod transitions;
