//! [`RedisBackend`]: one queue on one Redis, through upstream's Lua scripts.
//!
//! Each file of this module implements one section of `bullmq_core::backend`, with the same
//! file name as the trait's own file in core.

mod add;
mod admin;
mod blocking;
mod events;
mod lifecycle;
mod locks;
mod meta;
mod mutations;
mod queries;
mod schedulers;
mod transitions;

use std::sync::Arc;

use bullmq_core::clock::{Clock, SystemClock};
use bullmq_core::{Prefix, QueueName, Result};
use redis::aio::ConnectionManager;

use crate::error::wrap;
use crate::keys::QueueKeys;

/// How to reach Redis and which key prefix to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS.
    pub url: String,
    /// The key prefix; `bull` by default, like Node.js.
    pub prefix: Prefix,
}

impl RedisOptions {
    /// Options for `url` with the default prefix.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: Prefix::default(),
        }
    }

    /// Sets the key prefix.
    #[must_use]
    pub fn prefix(mut self, prefix: Prefix) -> Self {
        self.prefix = prefix;
        self
    }
}

/// The Redis backend of one queue.
///
/// Cloning is cheap and shares the connection, which reconnects by itself after a failure:
/// the failed call returns an error whose kind is `Connection`, the next one reconnects.
#[derive(Clone)]
pub struct RedisBackend {
    client: redis::Client,
    con: ConnectionManager,
    /// The dedicated connections (blocking waits, event reads) and the closing flag, shared by
    /// clones; a sibling gets its own.
    state: Arc<lifecycle::ConnState>,
    clock: Arc<dyn Clock>,
    keys: Arc<QueueKeys>,
    prefix: Prefix,
    queue: QueueName,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("queue", &self.keys.qualified_name)
            .finish_non_exhaustive()
    }
}

impl RedisBackend {
    /// Connects to Redis for `queue`.
    ///
    /// ```no_run
    /// # async fn run() -> bullmq_core::Result<()> {
    /// use bullmq_core::QueueName;
    /// use bullmq_redis::{RedisBackend, RedisOptions};
    ///
    /// let emails = QueueName::new("emails")?;
    /// let backend = RedisBackend::connect(&RedisOptions::new("redis://127.0.0.1:6379"), emails).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(options: &RedisOptions, queue: QueueName) -> Result<Self> {
        let client =
            redis::Client::open(options.url.as_str()).map_err(wrap("parse the Redis URL"))?;
        let con = ConnectionManager::new(client.clone())
            .await
            .map_err(wrap("connect"))?;
        let keys = Arc::new(QueueKeys::new(&options.prefix, &queue));
        Ok(Self {
            client,
            con,
            state: Arc::default(),
            clock: Arc::new(SystemClock),
            keys,
            prefix: options.prefix.clone(),
            queue,
        })
    }

    /// Reads time from `clock` (every timestamp the scripts receive).
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// A backend for another queue (and prefix) on the same connections.
    #[must_use]
    pub fn sibling(&self, queue: QueueName, prefix: Option<Prefix>) -> Self {
        let prefix = prefix.unwrap_or_else(|| self.prefix.clone());
        Self {
            keys: Arc::new(QueueKeys::new(&prefix, &queue)),
            prefix,
            queue,
            state: Arc::default(),
            ..self.clone()
        }
    }

    /// Now, Unix ms, from the backend's clock.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The client, to open dedicated connections.
    pub(crate) fn client(&self) -> &redis::Client {
        &self.client
    }

    /// The queue's keys.
    #[must_use]
    pub fn keys(&self) -> &QueueKeys {
        &self.keys
    }

    /// The queue's name.
    #[must_use]
    pub fn queue(&self) -> &QueueName {
        &self.queue
    }

    /// The key prefix.
    #[must_use]
    pub fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    pub(crate) fn connection(&self) -> ConnectionManager {
        self.con.clone()
    }
}
