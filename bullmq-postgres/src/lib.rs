//! The PostgreSQL backend of bullmq, on Node.js BullMQ 6.7.6's own schema and SQL (embedded
//! verbatim at build time), so that Rust and Node.js producers and workers share queues.
//!
//! - [`PostgresBackend`] implements every section of `bullmq_core::backend::Backend` on the
//!   command SQL, with a `LISTEN` connection (or polling) for waits and a gap-safe event
//!   reader.
//! - [`PostgresOptions`] and [`SchemaName`]: URL, schema (validated as upstream does), the
//!   `migrate` flag (off by default, as upstream), pool size, timeouts.
//! - [`PostgresConnection`]: a sqlx pool whose connections pin the schema's `search_path`.
//! - [`migrate`]: upstream's migration runner as a step of its own (ledger with
//!   `min_client_version`, advisory lock [`MIGRATION_ADVISORY_LOCK_KEY`] with
//!   `hashtext(schema)`, one transaction); schemas migrated by Node.js are accepted here and
//!   the other way round. Errors are typed ([`PostgresError`]).
//! - [`AddInTransaction`]: enqueueing inside the caller's own transaction.
//! - [`JobSearch`]: the operators' job search rule as one SQL condition.
#![forbid(unsafe_code)]

mod backend;
mod connection;
mod error;
mod job_search;
mod migrator;
mod options;
mod schema_name;
mod sql;
mod transaction;
mod wire;

pub use backend::PostgresBackend;
pub use connection::{ConnectFailure, PostgresConnection, TlsFailure};
pub use error::PostgresError;
pub use job_search::JobSearch;
pub use migrator::{
    MIGRATION_ADVISORY_LOCK_KEY, MINIMUM_POSTGRES_VERSION, RECOMMENDED_POSTGRES_VERSION, migrate,
};
pub use options::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_EVENT_HOLD_MAX, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_POLL_INTERVAL, PostgresOptions,
};
pub use schema_name::{DEFAULT_SCHEMA, MAX_SCHEMA_NAME_LEN, SchemaName};
pub use sql::Migration;
/// Upstream's schema migrations, embedded verbatim and ordered by version: [`migrate`] applies
/// those above the version a schema's ledger records (to show what is pending).
pub use sql::migrations::ALL as MIGRATIONS;
/// The sqlx this crate is built on, for callers that hand it their own connections.
pub use sqlx;
pub use transaction::AddInTransaction;

/// Internals that this repository's own tests and benchmarks reach: not part of the API, not
/// covered by semver, and free to change in any release.
#[doc(hidden)]
pub mod __private {
    /// Upstream's command and migration SQL as embedded (`src/sql.rs`).
    pub mod sql {
        pub use crate::sql::*;
    }
    /// The client names discovery reads (`src/connection/client_name.rs`).
    pub mod client_name {
        pub use crate::connection::client_name::*;
    }
    /// A `job` row's columns and their decoding into a job (`src/backend/row.rs`), for the
    /// fuzz targets.
    pub use crate::backend::JobRow;
    pub use crate::migrator::{CLIENT_MAJOR_VERSION, UPSTREAM_VERSION};
}
