//! The PostgreSQL side of [`ConnectionLog`]: which statement outcomes show the connection
//! lost, and which show it working.

use bullmq_core::telemetry::ConnectionLog;

/// Notes how a statement ended on `log`: a failure of the connection, or an answer from the
/// server (rows or an SQL error), which shows the connection works.
pub(crate) fn observe<T>(log: &ConnectionLog, outcome: &Result<T, sqlx::Error>) {
    match outcome {
        Err(e) if is_connection_failure(e) => log.lost(e),
        Ok(_) | Err(sqlx::Error::Database(_) | sqlx::Error::RowNotFound) => log.up(),
        Err(_) => {}
    }
}

/// A failure of the connection (refused, dropped, ended by the server), not a refusal of
/// the statement.
fn is_connection_failure(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(db) => {
            let code = db.code();
            let code = code.as_deref().unwrap_or_default();
            code.starts_with("08") || code.starts_with("57P")
        }
        _ => false,
    }
}
