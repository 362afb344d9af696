//! Where an example's queue lives: Redis at `REDIS_URL` (default `redis://127.0.0.1:6379`)
//! under the prefix `BULLMQ_PREFIX` (default `bull`), PostgreSQL at `DATABASE_URL` in the
//! schema `BULLMQ_SCHEMA` (default `bullmq`). The example tests give each run its own prefix
//! and schema, so that runs never share a queue.
#![allow(dead_code)]

use std::error::Error;

use bullmq::{Prefix, QueueName};

/// The store's URL from `var`, or `default`.
pub(crate) fn url(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

/// A Redis backend for `queue`.
#[cfg(feature = "redis")]
pub(crate) async fn redis(queue: &str) -> Result<bullmq::redis::RedisBackend, Box<dyn Error>> {
    use bullmq::redis::{RedisBackend, RedisOptions};
    let mut options = RedisOptions::new(url("REDIS_URL", "redis://127.0.0.1:6379"));
    if let Ok(prefix) = std::env::var("BULLMQ_PREFIX") {
        options = options.prefix(Prefix::new(prefix)?);
    }
    Ok(RedisBackend::connect(&options, QueueName::new(queue)?).await?)
}

/// A PostgreSQL backend for `queue`, its schema migrated.
#[cfg(feature = "postgres")]
pub(crate) async fn postgres(
    queue: &str,
) -> Result<bullmq::postgres::PostgresBackend, Box<dyn Error>> {
    use bullmq::postgres::{PostgresBackend, PostgresOptions, SchemaName};
    let mut options = PostgresOptions::new(url(
        "DATABASE_URL",
        "postgres://postgres@127.0.0.1:5432/test",
    ))
    .migrate(true);
    if let Ok(schema) = std::env::var("BULLMQ_SCHEMA") {
        options = options.schema(SchemaName::new(schema)?);
    }
    Ok(PostgresBackend::connect(&options, QueueName::new(queue)?).await?)
}

/// Unused in some examples.
pub(crate) fn prefix() -> Option<Prefix> {
    std::env::var("BULLMQ_PREFIX")
        .ok()
        .and_then(|p| Prefix::new(p).ok())
}
