//! The store sections' shared helpers: a schema of the test's own, jobs made and moved with
//! upstream's own commands ([`jobs`]), and the Node.js runner.

pub(crate) mod jobs;

pub(crate) use bullmq_test_support::postgres::admin;
pub(crate) use bullmq_test_support::run_node;

use bullmq_test_support::postgres::SchemaGuard;

/// A schema name no other test uses; the schema is dropped when this is dropped, and a failed
/// drop fails the test.
pub(crate) struct TestSchema(SchemaGuard);

impl TestSchema {
    /// A fresh name, `<tag>_<uuid>` (the schema is not created).
    pub(crate) fn new(tag: &str) -> Self {
        Self(SchemaGuard::new(tag).strict())
    }

    /// A fresh schema, `<tag>_<uuid>`, and a connected backend for `queue` in it.
    pub(crate) async fn with_backend(
        tag: &str,
        queue: &str,
    ) -> (Self, bullmq_postgres::PostgresBackend) {
        let schema = Self::new(tag);
        let backend = schema.backend(queue).await;
        (schema, backend)
    }
}

impl std::ops::Deref for TestSchema {
    type Target = SchemaGuard;

    fn deref(&self) -> &SchemaGuard {
        &self.0
    }
}
