//! The stores the suite runs on: each test gets a store of its own (a unique key prefix on
//! Redis, a unique tagged prefix on the cluster, a unique schema on PostgreSQL), removed when
//! the test ends (the cluster's with the cluster), so the suite runs in parallel on shared
//! servers.

use std::future::Future;

use bullmq::backend::Backend;
use bullmq::clock::Clock;
use bullmq::postgres::PostgresBackend;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{JobId, Prefix, QueueName};

use crate::support;
use crate::support::postgres::SchemaGuard;

/// One isolated place to keep queues in.
pub trait Store: Sized + Send + Sync + 'static {
    /// The backend under test.
    type B: Backend;

    /// A fresh, empty store.
    fn isolated() -> impl Future<Output = Self> + Send;

    /// A new backend (its own connections) for `queue` in this store.
    fn backend(&self, queue: &QueueName) -> impl Future<Output = Self::B> + Send;

    /// A new backend for `queue` that reads the time from `clock` (the section cases stop
    /// time to check the timestamps a move writes).
    fn backend_at<C: Clock + Clone>(
        &self,
        queue: &QueueName,
        clock: &C,
    ) -> impl Future<Output = Self::B> + Send;

    /// Writes job `id` of `queue` as another runtime might have, with raw commands: its
    /// `opts` a JSON string instead of an object, which no reader can decode.
    fn spoil_opts(&self, queue: &QueueName, id: &JobId) -> impl Future<Output = ()> + Send;

    /// Kills the client connection at `address` (as `Relay::node_connections` reports it) on
    /// the server holding this store's keys, as an operator or a network fault would
    /// (`CLIENT KILL`, `pg_terminate_backend`); how many it killed.
    fn kill_connection(&self, address: &str) -> impl Future<Output = u64> + Send;
}

/// `CLIENT KILL ADDR <address> SKIPME yes` on `conn`.
async fn client_kill(conn: &mut redis::aio::MultiplexedConnection, address: &str) -> u64 {
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ADDR")
        .arg(address)
        .arg("SKIPME")
        .arg("yes")
        .query_async(conn)
        .await
        .unwrap()
}

/// What [`Store::spoil_opts`] writes: JSON, but not an object.
const SPOILED_OPTS: &str = r#""just text""#;

/// The Redis key of job `id` of `queue` under `prefix`.
fn hash_key(prefix: &Prefix, queue: &QueueName, id: &JobId) -> String {
    format!("{}:{}:{}", prefix.as_str(), queue.as_str(), id.as_str())
}

/// `HSET <key> opts …` on `conn`.
async fn spoil_hash(conn: &mut redis::aio::MultiplexedConnection, key: &str) {
    let _: i64 = redis::cmd("HSET")
        .arg(key)
        .arg("opts")
        .arg(SPOILED_OPTS)
        .query_async(conn)
        .await
        .unwrap();
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

    async fn backend_at<C: Clock + Clone>(&self, queue: &QueueName, clock: &C) -> RedisBackend {
        self.backend(queue).await.with_clock(clock.clone())
    }

    async fn spoil_opts(&self, queue: &QueueName, id: &JobId) {
        let key = hash_key(&self.prefix, queue, id);
        spoil_hash(&mut support::redis().await, &key).await;
    }

    async fn kill_connection(&self, address: &str) -> u64 {
        client_kill(&mut support::redis().await, address).await
    }
}

/// Redis Cluster: the six-node cluster this binary starts once (thrown away when the binary
/// exits), under a prefix no other test uses whose hash tag keeps every key of the test's
/// queues in one slot (`{<unique>}`), as cluster mode requires.
pub struct RedisClusterStore {
    prefix: Prefix,
}

impl Store for RedisClusterStore {
    type B = RedisBackend;

    async fn isolated() -> Self {
        // Started by the first test to get here; the others wait for it (a blocking start
        // on this test's own runtime).
        support::redis_cluster::shared();
        Self {
            prefix: Prefix::new(format!("{{{}}}", support::unique_prefix())).unwrap(),
        }
    }

    async fn backend(&self, queue: &QueueName) -> RedisBackend {
        let url = support::redis_cluster::shared().url();
        let options = RedisOptions::new(&url).prefix(self.prefix.clone());
        RedisBackend::connect(&options, queue.clone())
            .await
            .unwrap_or_else(|e| panic!("connect to the Redis Cluster at {url}: {e}"))
    }

    async fn backend_at<C: Clock + Clone>(&self, queue: &QueueName, clock: &C) -> RedisBackend {
        self.backend(queue).await.with_clock(clock.clone())
    }

    async fn spoil_opts(&self, queue: &QueueName, id: &JobId) {
        let key = hash_key(&self.prefix, queue, id);
        let cluster = support::redis_cluster::shared();
        let port = cluster.owner_of(&key);
        let mut node = support::redis_cluster::TestCluster::node(port).await;
        spoil_hash(&mut node, &key).await;
    }

    /// On the primary of the prefix's hash tag, which holds every key of the store (the
    /// relay's too: the prefix's tag comes first in them).
    async fn kill_connection(&self, address: &str) -> u64 {
        let port = support::redis_cluster::shared().owner_of(self.prefix.as_str());
        let mut node = support::redis_cluster::TestCluster::node(port).await;
        client_kill(&mut node, address).await
    }
}

/// PostgreSQL, in a schema no other test uses (migrated by the first backend), dropped when
/// the test ends.
pub struct PostgresStore {
    schema: SchemaGuard,
}

impl Store for PostgresStore {
    type B = PostgresBackend;

    async fn isolated() -> Self {
        Self {
            schema: SchemaGuard::new("conf"),
        }
    }

    async fn backend(&self, queue: &QueueName) -> PostgresBackend {
        self.schema.backend(queue.as_str()).await
    }

    async fn backend_at<C: Clock + Clone>(&self, queue: &QueueName, clock: &C) -> PostgresBackend {
        self.backend(queue).await.with_clock(clock.clone())
    }

    async fn spoil_opts(&self, queue: &QueueName, id: &JobId) {
        use bullmq::postgres::sqlx;
        let table = format!("\"{}\".job", self.schema.as_str());
        sqlx::query(&format!(
            "UPDATE {table} SET opts = $3::jsonb WHERE queue = $1 AND id = $2"
        ))
        .bind(queue.as_str())
        .bind(id.as_str())
        .bind(SPOILED_OPTS)
        .execute(&mut support::postgres::admin().await)
        .await
        .unwrap();
    }

    /// Only a relay's `LISTEN` connection (named `bullmq:relay:…`) at `address`.
    async fn kill_connection(&self, address: &str) -> u64 {
        let killed: i64 = bullmq::postgres::sqlx::query_scalar(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) AS killed \
             FROM pg_stat_activity WHERE application_name LIKE 'bullmq:relay:%' \
               AND COALESCE(host(client_addr) || ':' || client_port, 'local') = $1) t \
             WHERE killed",
        )
        .bind(address)
        .fetch_one(&mut support::postgres::admin().await)
        .await
        .unwrap();
        u64::try_from(killed).unwrap()
    }
}
