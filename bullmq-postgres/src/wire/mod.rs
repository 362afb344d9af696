//! The parameter lists of upstream's SQL commands: what this backend binds, in the order and
//! with the SQL types Node.js's PostgreSQL backend binds them. One file per `Backend` section
//! whose calls build their arguments (derived values, JSON parameters, defaults Node.js
//! applies); a `backend/<section>.rs` method takes the bound statement from here, runs it on
//! the lanes and decodes the rows.
//!
//! The shapes both stores share (the job options, the job's fields) stay in
//! `bullmq_core::codec`; what is built here is only how PostgreSQL is handed them.

pub(crate) mod add;
mod jsonb;
pub(crate) mod locks;
mod numbers;
pub(crate) mod schedulers;
pub(crate) mod transitions;

pub(crate) use jsonb::js_jsonb;
pub(crate) use numbers::{millis, to_i32, to_i64};

use crate::connection::Query;
use crate::sql::SqlCommand;

/// `command(queue)`: a command whose only parameter is the queue.
pub(crate) fn queued(command: SqlCommand, queue: &str) -> Query<'_> {
    sqlx::query(command.text).bind(queue)
}

/// `command(queue, key, ..)`: a command whose first parameters are the queue and one text key
/// (a job id, a meta field, a scheduler or deduplication id); the caller binds the rest.
pub(crate) fn keyed<'q>(command: SqlCommand, queue: &'q str, key: &'q str) -> Query<'q> {
    queued(command, queue).bind(key)
}
