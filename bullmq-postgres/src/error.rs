//! PostgreSQL failures as bullmq errors.

use bullmq_core::{BackendError, BackendErrorKind};

use crate::connection::connect_failure::ConnectFailure;

/// The advice for a failed first connection, by its class.
fn connect_hint(source: &sqlx::Error) -> &'static str {
    ConnectFailure::of(source).advice()
}

/// A failure of the PostgreSQL client, server or schema; reach it through
/// `bullmq_core::Error::Backend(err)` and [`PostgresError::from_error`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The first connection to the server failed: nothing listens there, it refused the
    /// login, or it did not answer in time.
    #[error(
        "postgres: cannot connect to {target} ({}): {source}. {}",
        ConnectFailure::of(source),
        connect_hint(source)
    )]
    Unreachable {
        /// Where bullmq tried to connect (`postgres://user@host:port/db`, no password).
        target: String,
        /// The client's error.
        #[source]
        source: sqlx::Error,
    },
    /// A statement failed.
    #[error("postgres: {context}: {source}")]
    Query {
        /// What bullmq was doing.
        context: &'static str,
        /// The client's error.
        #[source]
        source: sqlx::Error,
    },
    /// The schema has no migration ledger, or one older than the SQL this client runs
    /// (upstream's `SchemaMigrationRequiredError`).
    #[error(
        "postgres: schema {schema:?} is at version {current_version}, this client needs \
         {required_version}. Migrate it: call `bullmq_postgres::migrate`, or set \
         `PostgresOptions::migrate(true)` (Node.js: `migrate: true` on the connection)."
    )]
    SchemaMigrationRequired {
        /// The schema.
        schema: String,
        /// Its version in the ledger; 0 when there is no ledger (or no schema).
        current_version: i32,
        /// The version the embedded SQL needs.
        required_version: i32,
    },
    /// The role connected may not migrate the schema (SQLSTATE 42501): migrations create the
    /// schema, tables and functions, which needs `CREATE` on the database (or the schema)
    /// and ownership of what earlier migrations made.
    #[error(
        "postgres: the connected role may not migrate schema {schema:?} ({refusal}). Run the \
         migration as the role that owns the schema (the owner role of docs/SECURITY.md), or \
         give this role CREATE on the database and ownership of the schema; runtime roles \
         need only the grants listed there and connect without `migrate`."
    )]
    MigrationNotPermitted {
        /// The schema.
        schema: String,
        /// The server's refusal.
        refusal: String,
    },
    /// The schema was migrated by a newer BullMQ whose migrations need a newer client
    /// (upstream's `SchemaVersionMismatchError`). Schemas are never downgraded.
    #[error(
        "postgres: schema {schema:?} requires BullMQ major version {minimum_client_version} or \
         newer, but this client is major version {client_version}. Upgrade bullmq to use it."
    )]
    SchemaVersionMismatch {
        /// The schema.
        schema: String,
        /// The highest `min_client_version` in the ledger.
        minimum_client_version: i32,
        /// This client's major version (the pinned Node.js BullMQ's).
        client_version: i32,
    },
    /// The server is older than the backend supports (upstream's
    /// `UnsupportedPostgresVersionError`); `PostgresOptions::skip_version_check` bypasses the
    /// check at your own risk.
    #[error(
        "postgres: the PostgreSQL backend requires server version {minimum_major} or newer, \
         but the server reports {server_version}. Upgrade PostgreSQL, or set \
         `PostgresOptions::skip_version_check(true)` at your own risk."
    )]
    UnsupportedPostgresVersion {
        /// The server's `server_version`.
        server_version: String,
        /// The oldest supported major version.
        minimum_major: i32,
    },
}

impl PostgresError {
    /// Why the connection could not be opened, when this is a failure to open one
    /// ([`Unreachable`](Self::Unreachable)).
    #[must_use]
    pub fn connect_failure(&self) -> Option<ConnectFailure> {
        match self {
            Self::Unreachable { source, .. } => Some(ConnectFailure::of(source)),
            _ => None,
        }
    }

    /// The PostgreSQL error inside a bullmq error, if it is one.
    #[must_use]
    pub fn from_error(err: &bullmq_core::Error) -> Option<&Self> {
        match err {
            bullmq_core::Error::Backend(inner) => {
                let inner: &(dyn std::error::Error + 'static) = &**inner;
                inner.downcast_ref::<Self>()
            }
            _ => None,
        }
    }
}

impl BackendError for PostgresError {
    fn kind(&self) -> BackendErrorKind {
        match self {
            // Whatever the class (`connect_failure` tells it), a worker waits its
            // `run_retry_delay` before it tries again, not a busy 100 ms.
            Self::Unreachable { .. } => BackendErrorKind::Connection,
            Self::Query { source, .. } => kind_of(source),
            Self::SchemaMigrationRequired { .. } | Self::SchemaVersionMismatch { .. } => {
                BackendErrorKind::Schema
            }
            Self::MigrationNotPermitted { .. } => BackendErrorKind::Server,
            Self::UnsupportedPostgresVersion { .. } => BackendErrorKind::Other,
        }
    }
}

/// The portable kind of a client error.
fn kind_of(err: &sqlx::Error) -> BackendErrorKind {
    match err {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => BackendErrorKind::Connection,
        sqlx::Error::PoolTimedOut => BackendErrorKind::Timeout,
        sqlx::Error::Database(db) => {
            // Class 08 is "connection exception"; 57P01..57P03 are the server shutting down,
            // crashing or still starting; 25006 is a read-only server (a demoted primary
            // after a failover): all worth a retry on a new connection.
            let code = db.code();
            let code = code.as_deref().unwrap_or_default();
            // 53300 is a full server: a slot frees up.
            if code.starts_with("08")
                || matches!(code, "57P01" | "57P02" | "57P03" | "25006" | "53300")
            {
                BackendErrorKind::Connection
            } else {
                BackendErrorKind::Server
            }
        }
        sqlx::Error::Protocol(_)
        | sqlx::Error::RowNotFound
        | sqlx::Error::TypeNotFound { .. }
        | sqlx::Error::ColumnIndexOutOfBounds { .. }
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_) => BackendErrorKind::Protocol,
        _ => BackendErrorKind::Other,
    }
}

/// Wraps a client error with what bullmq was doing.
pub(crate) fn wrap(context: &'static str) -> impl FnOnce(sqlx::Error) -> bullmq_core::Error {
    move |source| bullmq_core::Error::backend(PostgresError::Query { context, source })
}

/// Whether `err` is PostgreSQL's `undefined_table` (42P01).
pub(crate) fn is_undefined_table(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.code().as_deref() == Some("42P01"))
}
