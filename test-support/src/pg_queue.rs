//! A producer on a queue of a test's own PostgreSQL schema.

use bullmq_core::{Queue, QueueName};
use bullmq_postgres::PostgresBackend;

use crate::postgres::SchemaGuard;

impl SchemaGuard {
    /// A queue named `name` in this schema, on a new backend (migrating the schema first).
    pub async fn queue(&self, name: &str) -> Queue<PostgresBackend> {
        Queue::try_new(QueueName::new(name).unwrap(), self.backend(name).await)
            .expect("the backend is bound to this queue")
    }
}
