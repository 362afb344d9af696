//! Finding the queues of a schema: the distinct queues of its `meta` table.

use bullmq_core::{QueueName, Result};
use sqlx::Row as _;

use super::{PostgresBackend, sql_error};

/// Every queue with a `meta` row. The table's key starts with `queue`, so this reads its
/// index rather than the jobs.
const QUEUE_NAMES: &str = "SELECT DISTINCT queue FROM meta ORDER BY queue";

impl PostgresBackend {
    /// The names of every queue in this backend's schema, sorted: the queues with a row in
    /// the `meta` table (every runtime writes one when a `Queue` first writes to its queue).
    /// One indexed query; a name that is not a valid queue name (written by some other tool)
    /// is skipped.
    ///
    /// ```no_run
    /// # async fn run() -> bullmq_core::Result<()> {
    /// use bullmq_core::QueueName;
    /// use bullmq_postgres::{PostgresBackend, PostgresOptions};
    ///
    /// let options = PostgresOptions::new("postgres://postgres@127.0.0.1:5432/app");
    /// let backend = PostgresBackend::connect(&options, QueueName::new("any")?).await?;
    /// for queue in backend.queue_names().await? {
    ///     println!("{queue}");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A connection failure, or a schema without bullmq's tables (not migrated).
    pub async fn queue_names(&self) -> Result<Vec<QueueName>> {
        const COMMAND: &str = "list queues";
        let rows = sqlx::query(QUEUE_NAMES)
            .fetch_all(self.pool())
            .await
            .map_err(sql_error(COMMAND))?;
        let mut names = Vec::with_capacity(rows.len());
        for row in rows {
            let name: String = row.try_get("queue").map_err(sql_error(COMMAND))?;
            if let Ok(name) = QueueName::new(name) {
                names.push(name);
            }
        }
        Ok(names)
    }
}
