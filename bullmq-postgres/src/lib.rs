//! PostgreSQL backend for bullmq, on Node.js BullMQ 6.7.0's own schema and SQL.
//!
//! # What exists
//!
//! - [`sql`]: upstream's command and migration SQL, embedded verbatim at build time.
//! - [`PostgresOptions`] and [`SchemaName`]: URL, schema (validated as upstream does), the
//!   `migrate` flag (off by default, as upstream), pool size, timeouts.
//! - [`PostgresConnection`]: a sqlx pool whose connections pin the schema's `search_path`
//!   and leave `application_name` empty, plus [`PostgresConnection::open_dedicated`] for the
//!   named connections discovery reads ([`client_name`]).
//! - [`migrator`]: upstream's migration runner (ledger with `min_client_version`, advisory
//!   lock `0x42554c4c` with `hashtext(schema)`, one transaction), [`migrate`] as a step of its
//!   own, and the schema check a connection makes, with typed errors ([`PostgresError`]).
//!   Schemas migrated by Node.js are accepted here and the other way round.
//!
//! # What is next
//!
//! The `Backend` sections of `bullmq_core::backend` on the command SQL, the `LISTEN`
//! connection with waits on `bullmq_jobs` / `bullmq_events` (and a polling mode), the
//! gap-safe event reader, and enqueueing inside the caller's own transaction.
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
