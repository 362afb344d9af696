//! [`RedisBackend`]: one queue on one Redis, through upstream's Lua scripts.
//!
//! Each file of this module implements one section of `bullmq_core::backend`, with the same
//! file name as the trait's own file in core.

mod add;
mod admin;
mod blocking;
mod cluster;
mod discovery;
mod events;
mod lifecycle;
mod locks;
mod meta;
mod mutations;
mod queries;
mod relay;
mod repair;
mod schedulers;
mod transitions;

use std::sync::Arc;
use std::time::Duration;

use bullmq_core::clock::{Clock, SystemClock};
use bullmq_core::{Prefix, QueueName, Result};

use crate::connection::{ConnState, RedisOptions, ReplicaWait, SharedConnection};
use crate::error::{wrap_connect, wrap_named};
use crate::keys::QueueKeys;
use crate::payload_limit::PayloadLimit;
use crate::script::ScriptCall;
use crate::scripts::LuaScript;
use crate::server::ServerInfo;

/// The Redis backend of one queue.
///
/// Cloning is cheap and shares the connection, which reconnects by itself after a failure:
/// the failed call returns an error whose kind is `Connection`, the next one reconnects.
#[derive(Clone)]
pub struct RedisBackend {
    con: SharedConnection,
    /// The dedicated connections (blocking waits, event reads) and the closing flag, shared by
    /// clones; a sibling gets its own.
    state: Arc<ConnState>,
    clock: Arc<dyn Clock>,
    keys: Arc<QueueKeys>,
    prefix: Prefix,
    queue: QueueName,
    /// What the server reported when the backend connected.
    server: Option<Arc<ServerInfo>>,
    /// [`RedisOptions::response_timeout`], which also bounds opening a dedicated connection.
    response_timeout: Duration,
    /// [`RedisOptions::wait_for_replicas`].
    replica_wait: Option<ReplicaWait>,
    /// The server's `proto-max-bulk-len`, read on the first add of a job over 1 MB.
    payload_limit: Arc<PayloadLimit>,
    /// The relay namespace this handle is bound to (`RelayStore::relay_handle`).
    relay: Option<Arc<relay::RelayKeys>>,
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
        options.check()?;
        let connect_failed = || wrap_connect(bullmq_core::redact::redact_url(&options.url));
        let con = match options.routed()? {
            None => SharedConnection::connect(
                options.client()?,
                options.direct_connections,
                options.response_timeout,
            )
            .await
            .map_err(connect_failed())?,
            Some(nodes) => {
                let slot = if nodes.is_cluster() {
                    cluster::queue_slot(&options.prefix, &queue)?
                } else {
                    0
                };
                SharedConnection::connect_routed(
                    Arc::new(nodes),
                    slot,
                    options.direct_connections,
                    options.response_timeout,
                )
                .await
                .map_err(connect_failed())?
            }
        };
        let server = if options.skip_version_check {
            None
        } else {
            let server = ServerInfo::read(&mut con.clone()).await?;
            server.check().map_err(bullmq_core::Error::backend)?;
            Some(Arc::new(server))
        };
        let state = Arc::default();
        let keys = Arc::new(QueueKeys::new(&options.prefix, &queue));
        Ok(Self {
            con,
            state,
            clock: Arc::new(SystemClock),
            keys,
            prefix: options.prefix.clone(),
            queue,
            server,
            response_timeout: options.response_timeout,
            replica_wait: options.wait_for_replicas,
            payload_limit: Arc::default(),
            relay: None,
        })
    }

    /// The server as `INFO` described it when the backend connected (upstream's
    /// `redisVersion` and `databaseType`, plus the eviction policy), or `HELLO` where the user
    /// may not run `INFO` (then without the eviction policy); `None` with
    /// [`RedisOptions::skip_version_check`].
    #[must_use]
    pub fn server(&self) -> Option<&ServerInfo> {
        self.server.as_deref()
    }

    /// Reads time from `clock`: every timestamp the scripts receive, and the time of every
    /// `Queue`, `Worker`, `FlowProducer`, `JobScheduler` and `QueueEvents` built on this
    /// backend ([`Lifecycle::clock`](bullmq_core::backend::Lifecycle::clock)). Set it before
    /// cloning: clones and siblings share the clock they were made with.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// A backend for another queue (and prefix) on the same connections.
    #[must_use]
    pub fn sibling(&self, queue: QueueName, prefix: Option<Prefix>) -> Self {
        let prefix = prefix.unwrap_or_else(|| self.prefix.clone());
        let keys = QueueKeys::new(&prefix, &queue);
        // On a cluster, another queue's keys may be in another slot, served by another node.
        let con = self
            .con
            .for_slot(crate::connection::slot(keys.qualified_name.as_bytes()));
        Self {
            con,
            keys: Arc::new(keys),
            prefix,
            queue,
            state: Arc::default(),
            ..self.clone()
        }
    }

    /// Runs one upstream script on the shared connection; `what` names the operation in the
    /// error.
    pub(crate) async fn run(
        &self,
        call: ScriptCall,
        script: &LuaScript,
        what: &'static str,
    ) -> Result<redis::Value> {
        call.invoke(&self.connection(), script).await.map_err(|e| {
            let command = format!("EVALSHA {}", script.name);
            wrap_named(what, Some(command), call.first_key())(e)
        })
    }

    /// Runs one plain command on the shared connection; `what` names the operation in the
    /// error.
    pub(crate) async fn query(&self, cmd: &redis::Cmd, what: &'static str) -> Result<redis::Value> {
        cmd.query_async(&mut self.connection())
            .await
            .map_err(crate::error::wrap(what))
    }

    /// One `SCAN cursor MATCH pattern COUNT count` round: the next cursor (0 once the scan is
    /// done) and the keys this round found, which may repeat ones an earlier round found.
    pub(crate) async fn scan_round(
        &self,
        cursor: u64,
        pattern: &str,
        count: u32,
        what: &'static str,
    ) -> Result<(u64, Vec<String>)> {
        redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count)
            .query_async(&mut self.connection())
            .await
            .map_err(crate::error::wrap(what))
    }

    /// [`RedisOptions::wait_for_replicas`].
    pub(crate) fn replica_wait(&self) -> Option<ReplicaWait> {
        self.replica_wait
    }

    /// The largest argument the server takes, in bytes, for calls whose largest argument
    /// is `largest` bytes (see [`PayloadLimit::for_largest`]).
    pub(crate) async fn payload_limit(&self, largest: usize) -> Result<u64> {
        self.payload_limit.for_largest(&self.con, largest).await
    }

    /// How long a reply, or opening a dedicated connection, may take.
    pub(crate) fn response_timeout(&self) -> Duration {
        self.response_timeout
    }

    /// Now, Unix ms, from the backend's clock.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The queue's keys.
    #[must_use]
    pub(crate) fn keys(&self) -> &QueueKeys {
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

    pub(crate) fn connection(&self) -> SharedConnection {
        self.con.clone()
    }
}
