//! A command's rows: running the commands that take only the queue, or the queue and one key,
//! and reading the answers every section reads alike (the one row, a column of it, the ids).

use bullmq_core::Result;
use sqlx::postgres::PgRow;
use sqlx::{Postgres, Row as _};

use super::{PostgresBackend, sql_error};
use crate::connection::{OnLane as _, Query};
use crate::error::PostgresError;
use crate::sql::SqlCommand;
use crate::wire;

impl PostgresBackend {
    /// Every row `query` answers, on the backend's lanes; a failure is wrapped with `what`.
    pub(crate) async fn rows(&self, query: Query<'_>, what: &'static str) -> Result<Vec<PgRow>> {
        query
            .fetch_all_on(self.lanes())
            .await
            .map_err(sql_error(what))
    }

    /// Runs `query`, which answers no rows, on the backend's lanes and answers how many rows it
    /// touched; a failure is wrapped with `what`.
    pub(crate) async fn execute(&self, query: Query<'_>, what: &'static str) -> Result<u64> {
        let done = query.execute_on(self.lanes()).await;
        Ok(done.map_err(sql_error(what))?.rows_affected())
    }

    /// Every row `command` answers for this queue (its only parameter); a failure is wrapped
    /// with `what`.
    pub(crate) async fn queue_rows(
        &self,
        command: SqlCommand,
        what: &'static str,
    ) -> Result<Vec<PgRow>> {
        self.rows(wire::queued(command, self.queue_name()), what)
            .await
    }

    /// `command(queue, key, ..)` for this queue; the caller binds the rest.
    pub(crate) fn keyed<'a>(&'a self, command: SqlCommand, key: &'a str) -> Query<'a> {
        wire::keyed(command, self.queue_name(), key)
    }

    /// Every row `command` answers for this queue and one text key (a job id, a meta field, a
    /// scheduler or deduplication id); a failure is wrapped with `what`.
    pub(crate) async fn keyed_rows(
        &self,
        command: SqlCommand,
        key: &str,
        what: &'static str,
    ) -> Result<Vec<PgRow>> {
        self.rows(self.keyed(command, key), what).await
    }

    /// Whether this queue has `key` as `command` looks it up (the `exists` column of its one
    /// row); a failure is wrapped with `what`.
    pub(crate) async fn keyed_exists(
        &self,
        command: SqlCommand,
        key: &str,
        what: &'static str,
    ) -> Result<bool> {
        let rows = self.keyed_rows(command, key, what).await?;
        one_value(rows, "exists", what)
    }
}

/// The first row, or a protocol error naming `what` when a command that always answers one
/// row answered none.
pub(crate) fn one_row(rows: Vec<PgRow>, what: &'static str) -> Result<PgRow> {
    rows.into_iter().next().ok_or_else(|| {
        bullmq_core::Error::backend(PostgresError::Query {
            context: what,
            source: sqlx::Error::RowNotFound,
        })
    })
}

/// `column` of the one row a command always answers.
pub(crate) fn one_value<T>(rows: Vec<PgRow>, column: &str, what: &'static str) -> Result<T>
where
    T: for<'r> sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    one_row(rows, what)?
        .try_get(column)
        .map_err(sql_error(what))
}

/// The `id` column of every row, in the command's order.
pub(crate) fn id_column<T: From<String>>(rows: &[PgRow], what: &'static str) -> Result<Vec<T>> {
    rows.iter()
        .map(|row| {
            row.try_get::<String, _>("id")
                .map(T::from)
                .map_err(sql_error(what))
        })
        .collect()
}
