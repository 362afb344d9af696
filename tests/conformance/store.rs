//! The stores the suite runs on: each test gets a store of its own (a unique key prefix on
//! Redis, a unique schema on PostgreSQL), removed when the test ends, so the suite runs in
//! parallel on shared servers.

use std::future::Future;

use bullmq::core::backend::Backend;
use bullmq::postgres::sqlx::{self, ConnectOptions as _, Connection as _};
use bullmq::postgres::{PostgresBackend, PostgresOptions, SchemaName};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{Prefix, QueueName};

use crate::support;

/// One isolated place to keep queues in.
pub trait Store: Sized + Send + Sync + 'static {
    /// The backend under test.
    type B: Backend;

    /// A fresh, empty store.
    fn isolated() -> impl Future<Output = Self> + Send;

    /// A new backend (its own connections) for `queue` in this store.
    fn backend(&self, queue: &QueueName) -> impl Future<Output = Self::B> + Send;
}

/// Redis, under a key prefix no other test uses.
pub struct RedisStore {
    prefix: Prefix,
    _guard: support::PrefixGuard,
}

impl Store for RedisStore {
    type B = RedisBackend;

    async fn isolated() -> Self {
        let prefix = support::unique_prefix();
        Self {
            prefix: Prefix::new(&prefix).unwrap(),
            _guard: support::PrefixGuard(prefix),
        }
    }

    async fn backend(&self, queue: &QueueName) -> RedisBackend {
        let options = RedisOptions::new(support::redis_url()).prefix(self.prefix.clone());
        RedisBackend::connect(&options, queue.clone())
            .await
            .unwrap_or_else(|e| panic!("connect to Redis at {}: {e}", support::redis_url()))
    }
}

/// PostgreSQL, in a schema no other test uses (migrated by the first backend).
pub struct PostgresStore {
    schema: SchemaName,
}

/// The test PostgreSQL: `DATABASE_URL`, or the local default (trust authentication).
pub fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

impl Store for PostgresStore {
    type B = PostgresBackend;

    async fn isolated() -> Self {
        let name = format!("conf_{}", uuid::Uuid::new_v4().simple());
        Self {
            schema: SchemaName::new(name).unwrap(),
        }
    }

    async fn backend(&self, queue: &QueueName) -> PostgresBackend {
        let options = PostgresOptions::new(database_url())
            .schema(self.schema.clone())
            .migrate(true);
        PostgresBackend::connect(&options, queue.clone())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "connect to PostgreSQL at {}: {e}. The suite needs PostgreSQL 13+ with a \
                     database `test` (or DATABASE_URL); .ci/run starts the local cluster.",
                    database_url()
                )
            })
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema.quoted());
        // Drop runs inside the test's runtime, which must not be blocked on.
        let dropping = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime to drop the schema");
            runtime.block_on(async {
                let options: sqlx::postgres::PgConnectOptions =
                    database_url().parse().expect("DATABASE_URL parses");
                if let Ok(mut conn) = options.connect().await {
                    let _ = sqlx::raw_sql(&sql).execute(&mut conn).await;
                    let _ = conn.close().await;
                }
            });
        });
        let _ = dropping.join();
    }
}
