//! PostgreSQL backend for bullmq, on Node.js BullMQ 6.7.0's own schema and SQL.
//!
//! [`PostgresBackend`] implements every section of `bullmq_core::backend::Backend` with the
//! SQL command Node.js's PostgreSQL backend runs for it (embedded verbatim at build time);
//! `src/backend/<section>.rs` mirrors `bullmq_core::backend::<section>`. Node.js services on
//! the same schema share its queues: jobs, flows, schedulers and events cross both ways.
//!
//! - [`PostgresOptions`] and [`SchemaName`]: URL (TLS through libpq's `sslmode` parameters
//!   with the `tls` feature), schema (validated as upstream does), the `migrate` flag (off by
//!   default, as upstream), pool size, timeouts, `LISTEN` or polling.
//! - [`migrate`]: upstream's migration runner as a step of its own (ledger with
//!   `min_client_version`, one advisory lock, one transaction); schemas migrated by Node.js
//!   are accepted here and the other way round. Failures are typed ([`PostgresError`]).
//! - Commands run on a small set of connections of our own, one round trip each. Workers
//!   wait on `LISTEN bullmq_jobs` through one dedicated connection and poll while it is down
//!   (or always, with `listen(false)`, for poolers where `LISTEN` hears nothing).
//! - `QueueEvents` reads upstream's `event` table without the gaps upstream's reader leaves
//!   when transactions commit out of id order: every committed event once, in id order.
//! - [`AddInTransaction`]: adding jobs inside the caller's own transaction, so a job exists
//!   if and only if that transaction commits.
#![forbid(unsafe_code)]

mod backend;
pub mod client_name;
mod connect_failure;
mod connection;
mod error;
mod lanes;
mod link;
pub mod migrator;
mod options;
mod schema_name;
pub mod sql;
mod transaction;

pub use backend::PostgresBackend;
pub use connect_failure::{ConnectFailure, TlsFailure};
pub use connection::PostgresConnection;
pub use error::PostgresError;
pub use migrator::migrate;
pub use options::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_EVENT_HOLD_MAX, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_POLL_INTERVAL, PostgresOptions,
};
pub use schema_name::{DEFAULT_SCHEMA, MAX_SCHEMA_NAME_LEN, SchemaName};
/// The sqlx this crate is built on, for callers that hand it their own connections.
pub use sqlx;
pub use transaction::AddInTransaction;
