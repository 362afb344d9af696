//! The parameter lists of upstream's SQL commands: what this backend binds, in the order and
//! with the SQL types Node.js's PostgreSQL backend binds them. A `backend/<section>.rs`
//! method takes the bound statement from here (build), runs it on the lanes (call) and reads
//! the rows (decode, `backend/rows.rs` and `backend/row.rs`).
//!
//! - [`unbound`], [`queued`], [`keyed`] (this file): the command with no parameter, with the
//!   queue, with the queue and one key; a call whose further values go as given binds them
//!   on the result.
//! - `<section>.rs` (`add`, `admin`, `locks`, `mutations`, `queries`, `relay`, `schedulers`,
//!   `transitions`): one function per command whose arguments are built (derived values,
//!   JSON parameters, the defaults Node.js applies), named after the command.
//! - `numbers.rs`, `jsonb.rs`: counts, times and durations as SQL integers; `jsonb` written
//!   as JavaScript writes it.
//!
//! The shapes both stores share (the job options, the job's fields) stay in
//! `bullmq_core::codec`; what is built here is only how PostgreSQL is handed them.

pub(crate) mod add;
pub(crate) mod admin;
mod jsonb;
pub(crate) mod locks;
pub(crate) mod mutations;
mod numbers;
pub(crate) mod queries;
pub(crate) mod relay;
pub(crate) mod schedulers;
pub(crate) mod transitions;

pub(crate) use jsonb::js_jsonb;
pub(crate) use numbers::{clamp_i32, millis, to_i32, to_i64};

use crate::connection::Query;
use crate::sql::SqlCommand;

/// Where a job is, as the commands about one job take it first: its queue and its id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobAt<'q> {
    pub(crate) queue: &'q str,
    pub(crate) id: &'q str,
}

impl<'q> JobAt<'q> {
    /// `command(queue, id, ..)`; the caller binds the rest.
    pub(crate) fn keyed(self, command: SqlCommand) -> Query<'q> {
        keyed(command, self.queue, self.id)
    }
}

/// `command()`: a command that takes no parameter.
pub(crate) fn unbound<'q>(command: SqlCommand) -> Query<'q> {
    sqlx::query(command.text)
}

/// `command(queue)`: a command whose only parameter is the queue.
pub(crate) fn queued(command: SqlCommand, queue: &str) -> Query<'_> {
    unbound(command).bind(queue)
}

/// `command(queue, key, ..)`: a command whose first parameters are the queue and one text key
/// (a job id, a meta field, a scheduler or deduplication id); the caller binds the rest.
pub(crate) fn keyed<'q>(command: SqlCommand, queue: &'q str, key: &'q str) -> Query<'q> {
    queued(command, queue).bind(key)
}
