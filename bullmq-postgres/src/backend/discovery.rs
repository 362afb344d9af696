//! Finding the queues of a schema: every queue with a row in the `meta` table, which each
//! runtime writes when a queue is first used.

use bullmq_core::{QueueName, Result};
use sqlx::Row as _;

use super::{PostgresBackend, sql_error};

/// The queues named in `meta`; the table is keyed by queue, so this reads its index.
const QUEUE_NAMES: &str = "SELECT DISTINCT queue FROM meta ORDER BY queue";

impl PostgresBackend {
    /// Every queue of this backend's schema, sorted by name: the queues that have a row in
    /// the `meta` table. A name another runtime wrote that is not a valid queue name is left
    /// out.
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
    /// The server's refusal or a lost connection.
    pub async fn queue_names(&self) -> Result<Vec<QueueName>> {
        const WHAT: &str = "list queues";
        let rows = self.rows(sqlx::query(QUEUE_NAMES), WHAT).await?;
        let mut names = Vec::with_capacity(rows.len());
        for row in &rows {
            let name: String = row.try_get("queue").map_err(sql_error(WHAT))?;
            if let Ok(name) = QueueName::new(name) {
                names.push(name);
            }
        }
        Ok(names)
    }
}
