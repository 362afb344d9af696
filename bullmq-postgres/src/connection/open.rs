//! One connection opened outside any pool, as the first connection of
//! [`PostgresConnection::connect`](super::PostgresConnection::connect), the migrator's and the
//! lanes' are: opening it within the timeout ([`open`], [`open_first`]), naming its session for
//! discovery ([`name_session`]) and saying where it goes without the password ([`target`]).

use std::time::Duration;

use sqlx::ConnectOptions as _;
use sqlx::PgConnection;
use sqlx::postgres::PgConnectOptions;

use crate::error::PostgresError;
use crate::options::PostgresOptions;
use bullmq_core::Result;

/// [`open`] for the first connection of `options`, after the checks that need no server
/// (TLS asked for without the `tls` feature, an unreadable certificate file), which fail the
/// same way with the class that fits rather than a bare I/O error.
pub(crate) async fn open_first(
    options: &PostgresOptions,
    connect: &PgConnectOptions,
) -> Result<PgConnection> {
    options.tls_precheck(connect).map_err(|source| {
        bullmq_core::Error::backend(PostgresError::Unreachable {
            target: target(connect),
            source,
        })
    })?;
    open(connect, options.connect_timeout).await
}

/// Opens one connection within `timeout`, failing with [`PostgresError::Unreachable`].
pub(crate) async fn open(connect: &PgConnectOptions, timeout: Duration) -> Result<PgConnection> {
    let unreachable = |source| {
        bullmq_core::Error::backend(PostgresError::Unreachable {
            target: target(connect),
            source,
        })
    };
    match tokio::time::timeout(timeout, connect.connect()).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(source)) => Err(unreachable(source)),
        Err(_) => Err(unreachable(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no connection within {timeout:?}"),
        )))),
    }
}

/// Where `connect` points, without the password: `postgres://user@host:port/db`.
pub(crate) fn target(connect: &PgConnectOptions) -> String {
    let host = match connect.get_socket() {
        Some(socket) => socket.display().to_string(),
        None => connect.get_host().to_owned(),
    };
    format!(
        "postgres://{}@{}:{}/{}",
        connect.get_username(),
        host,
        connect.get_port(),
        connect.get_database().unwrap_or_default()
    )
}

/// Sets the session's `application_name` to `name` with `set_config`, as upstream does after
/// connecting (so a replacement connection is named the same way): the name discovery reads.
pub(crate) async fn name_session<'e>(
    conn: impl sqlx::PgExecutor<'e>,
    name: &str,
) -> std::result::Result<(), sqlx::Error> {
    sqlx::query("SELECT set_config('application_name', $1, false)")
        .bind(name)
        .execute(conn)
        .await
        .map(drop)
}
