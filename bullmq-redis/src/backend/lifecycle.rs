//! `Lifecycle` for Redis: readiness, closing, client names and keys; and the two dedicated
//! connections the blocking commands run on.
//!
//! # Dedicated connections
//!
//! A blocking command holds its connection until it returns, and a multiplexed connection
//! answers in order, so nothing may share a connection with one. Each backend (with its
//! clones) therefore has two dedicated connections besides the shared one, opened on first use:
//! - the *blocking* connection, for the worker's `BZPOPMIN` on the marker key;
//! - the *events* connection, for `QueueEvents`' `XREAD BLOCK`.
//!
//! They are separate so that a worker and a `QueueEvents` built on clones of one backend never
//! wait behind each other. Both are opened without a response timeout (the client's default of
//! 500 ms would cut every wait short); the waits carry their own deadline instead.
//!
//! # Client names
//!
//! Node.js names the connections that `getWorkers()` looks for: a worker's blocking connection
//! `<prefix>:<base64(queue)>` (with `:w:<name>` for a named worker), and `QueueEvents`'
//! connection `…:qe`. We name the same dedicated connections, and only those: the shared
//! connection stays unnamed, as a Node.js `Queue`'s does. A name does not survive a reconnect,
//! so it is not set once but every time a dedicated connection is opened; a dedicated
//! connection that fails is dropped and the next call opens (and names) a fresh one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bullmq_core::backend::{BlockTimeouts, ClientRole, Lifecycle, NodeKey};
use bullmq_core::clock::Clock;
use bullmq_core::{Error, Prefix, QueueName, Result};
use redis::AsyncConnectionConfig;
use redis::aio::MultiplexedConnection;
use tokio::sync::{Mutex, Notify};

use super::RedisBackend;
use crate::connection::timed_out;
use crate::error::wrap;
use crate::server::ServerInfo;

/// Node.js' longest useful blocking wait (`maximumBlockTimeout`): a `BZPOPMIN` blocked longer
/// risks being lost across a reconnect.
const MAXIMUM_BLOCK: Duration = Duration::from_secs(10);

/// The shortest blocking wait Redis honours: 1 ms from 7.0.8; before that a timeout this short
/// read as zero, which means "forever", so Node.js uses 2 ms there.
const MINIMUM_BLOCK: Duration = Duration::from_millis(1);
const MINIMUM_BLOCK_OLD_REDIS: Duration = Duration::from_millis(2);

/// Which dedicated connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dedicated {
    /// The worker's `BZPOPMIN`.
    Blocking,
    /// `QueueEvents`' `XREAD`.
    Events,
}

impl Dedicated {
    fn what(self) -> &'static str {
        match self {
            Self::Blocking => "open the blocking connection",
            Self::Events => "open the events connection",
        }
    }
}

/// What the server can do with blocking timeouts (Node.js' `capabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Capabilities {
    /// Fractional seconds are accepted (Redis 6.0 and later).
    pub(crate) can_double_timeout: bool,
    /// A 1 ms timeout is honoured (Redis 7.0.8 and later).
    pub(crate) can_block_for_1ms: bool,
}

impl Default for Capabilities {
    fn default() -> Self {
        Self::ASSUMED
    }
}

impl Capabilities {
    /// What Node.js assumes when it skips reading the server's version (it takes it for
    /// the oldest supported one).
    const ASSUMED: Self = Self {
        can_double_timeout: false,
        can_block_for_1ms: false,
    };

    /// What `server` can do; other servers than Redis (Valkey, Dragonfly) can do both, as
    /// Node.js decides.
    pub(crate) fn of(server: &ServerInfo) -> Self {
        Self {
            can_double_timeout: !server.is_redis_older_than((6, 0, 0)),
            can_block_for_1ms: !server.is_redis_older_than((7, 0, 8)),
        }
    }
}

/// A backend's dedicated connections and closing flag, shared by its clones.
#[derive(Default)]
pub(crate) struct ConnState {
    closing: AtomicBool,
    /// The connection for blocking waits (`BZPOPMIN`), opened on first use so that a blocked
    /// call never holds up the shared connection.
    blocking: Mutex<Option<Opened>>,
    /// The blocking connection's name, when a worker gave itself one.
    blocking_name: StdMutex<Option<String>>,
    /// The events connection's name, once `QueueEvents` named it.
    events_name: StdMutex<Option<String>>,
    events: Mutex<Option<Opened>>,
    /// Wakes the waits in flight when their dedicated connection is dropped.
    blocking_interrupt: Notify,
    events_interrupt: Notify,
    capabilities: Capabilities,
}

impl ConnState {
    /// The signal that the dedicated connection was dropped under a wait.
    pub(crate) fn interrupt(&self, which: Dedicated) -> &Notify {
        match which {
            Dedicated::Blocking => &self.blocking_interrupt,
            Dedicated::Events => &self.events_interrupt,
        }
    }

    /// The state of a backend connected to `server`; `None` when its `INFO` was not read
    /// (`skip_version_check`): then the server is taken for the oldest supported Redis, as
    /// Node.js takes it.
    pub(crate) fn for_server(server: Option<&ServerInfo>) -> Self {
        Self {
            capabilities: server.map_or(Capabilities::ASSUMED, Capabilities::of),
            ..Self::default()
        }
    }

    /// Names the blocking connection `name` (a relay's inbox connection).
    pub(crate) fn with_blocking_name(self, name: Option<String>) -> Self {
        *self
            .blocking_name
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = name;
        self
    }

    /// What the server can do.
    pub(crate) fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn name(&self, which: Dedicated) -> &StdMutex<Option<String>> {
        match which {
            Dedicated::Blocking => &self.blocking_name,
            Dedicated::Events => &self.events_name,
        }
    }
}

/// A dedicated connection, with the [generation](crate::connection::SharedConnection::generation)
/// of the node it was opened to.
type Opened = (MultiplexedConnection, u64);

/// Where a dedicated connection is kept.
type Slot = Mutex<Option<Opened>>;

impl RedisBackend {
    /// This backend's connection state (shared with its clones).
    pub(crate) fn conn_state(&self) -> Arc<ConnState> {
        Arc::clone(&self.state)
    }

    fn slot<'a>(&'a self, state: &'a ConnState, which: Dedicated) -> &'a Slot {
        match which {
            Dedicated::Blocking => &state.blocking,
            Dedicated::Events => &state.events,
        }
    }

    /// A handle on a dedicated connection, opened and named first if there is none.
    pub(crate) async fn dedicated(
        &self,
        state: &ConnState,
        which: Dedicated,
    ) -> Result<MultiplexedConnection> {
        if state.closing.load(Ordering::SeqCst) {
            return Err(Error::Closed("redis backend"));
        }
        let mut slot = self.slot(state, which).lock().await;
        // After a switch, the wait must not go to the old primary on the connection kept.
        self.con.refresh().await.map_err(wrap(which.what()))?;
        let generation = self.con.generation();
        match slot.as_ref() {
            Some((con, opened_to)) if *opened_to == generation => return Ok(con.clone()),
            // Calls go to another node now (a failover): so must the waits.
            Some(_) => *slot = None,
            None => {}
        }
        let con = self.open_dedicated(state, which).await?;
        *slot = Some((con.clone(), generation));
        Ok(con)
    }

    /// Drops a dedicated connection and wakes the waits in flight on it, which let go of their
    /// handles; with the last handle gone the socket closes and Redis forgets the command.
    pub(crate) async fn drop_dedicated(&self, state: &ConnState, which: Dedicated) {
        let dropped = self.slot(state, which).lock().await.take();
        drop(dropped);
        state.interrupt(which).notify_waiters();
    }

    async fn open_dedicated(
        &self,
        state: &ConnState,
        which: Dedicated,
    ) -> Result<MultiplexedConnection> {
        // Opening is bounded by the response timeout, though the waits are not: over a
        // half-open network (a partition, a dead NAT entry) the handshake would otherwise hang
        // for good, and with it the worker's loop, even after the network is back.
        let limit = self.response_timeout();
        tokio::time::timeout(limit, self.open_dedicated_unbounded(state, which, limit))
            .await
            .map_err(|_| wrap(which.what())(timed_out("opening a dedicated connection")))?
    }

    async fn open_dedicated_unbounded(
        &self,
        state: &ConnState,
        which: Dedicated,
        limit: Duration,
    ) -> Result<MultiplexedConnection> {
        let config = AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(limit));
        let client = self.node_client().await.map_err(wrap(which.what()))?;
        let mut con = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(wrap(which.what()))?;
        let name = match which {
            // Node.js names every worker's blocking connection, unnamed workers included.
            Dedicated::Blocking => Some(self.blocking_connection_name(state)),
            Dedicated::Events => state
                .events_name
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        };
        if let Some(name) = name {
            set_name(&mut con, &name).await?;
        }
        Ok(con)
    }

    fn blocking_connection_name(&self, state: &ConnState) -> String {
        state
            .blocking_name
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| self.client_name(&ClientRole::Worker { name: None }))
    }

    /// Names a dedicated connection anew: drops the open one, so the next is opened with the
    /// name, and opens it now so that the role is visible in `CLIENT LIST` at once.
    async fn rename(&self, state: &ConnState, which: Dedicated, name: String) -> Result<()> {
        *state
            .name(which)
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(name);
        self.drop_dedicated(state, which).await;
        self.dedicated(state, which).await.map(drop)
    }
}

/// `CLIENT SETNAME`; servers without `CLIENT` (some managed Redis) are let be, as Node.js does.
async fn set_name(con: &mut MultiplexedConnection, name: &str) -> Result<()> {
    let reply: redis::RedisResult<()> = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(name)
        .query_async(con)
        .await;
    match reply {
        Err(e) if is_unknown_client_command(&e) => Ok(()),
        other => other.map_err(wrap("name the connection")),
    }
}

/// Node.js' `clientCommandMessageReg`: the server does not know the `CLIENT` command.
pub(crate) fn is_unknown_client_command(e: &redis::RedisError) -> bool {
    let message = e.to_string().to_ascii_lowercase();
    message.contains("unknown command")
        && ["'client'", "`client`", "'client", "`client"]
            .iter()
            .any(|quoted| message.contains(quoted))
}

/// Takes `<prefix>:<queue>:<id>` apart as upstream does: the id after the last `:`, the queue
/// between the two last, the prefix (which may hold `:`) before. Keys without two `:`, or with
/// an empty queue or id, are not node keys.
pub(crate) fn parse_node_key(key: &str) -> Option<NodeKey> {
    let (rest, id) = key.rsplit_once(':')?;
    let (prefix, queue) = rest.rsplit_once(':')?;
    if queue.is_empty() || id.is_empty() {
        return None;
    }
    Some(NodeKey {
        prefix: prefix.to_owned(),
        queue: queue.to_owned(),
        id: id.to_owned(),
    })
}

impl Lifecycle for RedisBackend {
    async fn wait_until_ready(&self) -> Result<()> {
        let _: redis::Value = redis::cmd("PING")
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("ping"))?;
        Ok(())
    }

    /// Marks the backend closing and drops both dedicated connections, which interrupts a
    /// wait in flight. The shared connection closes when the last clone is dropped; it has
    /// nothing buffered to flush, so `force` changes nothing.
    async fn close(&self, _force: bool) -> Result<()> {
        let state = self.conn_state();
        state.closing.store(true, Ordering::SeqCst);
        self.drop_dedicated(&state, Dedicated::Blocking).await;
        self.drop_dedicated(&state, Dedicated::Events).await;
        Ok(())
    }

    /// Drops both dedicated connections (interrupting any wait); unlike [`close`](Self::close)
    /// the backend stays usable and reopens them on next use.
    async fn disconnect(&self) -> Result<()> {
        let state = self.conn_state();
        self.drop_dedicated(&state, Dedicated::Blocking).await;
        self.drop_dedicated(&state, Dedicated::Events).await;
        Ok(())
    }

    /// A worker names its blocking connection, `QueueEvents` its events connection. A queue
    /// names nothing: Node.js names no connection of a `Queue`, and the bare
    /// `<prefix>:<base64(queue)>` is what `getWorkers()` counts as an unnamed worker.
    async fn set_client_role(&self, role: ClientRole) -> Result<()> {
        let state = self.conn_state();
        let which = match role {
            ClientRole::Queue => return Ok(()),
            ClientRole::Worker { .. } => Dedicated::Blocking,
            ClientRole::QueueEvents => Dedicated::Events,
        };
        self.rename(&state, which, self.client_name(&role)).await
    }

    fn is_closing(&self) -> bool {
        self.conn_state().closing.load(Ordering::SeqCst)
    }

    fn handle(&self) -> Self {
        Self {
            state: Arc::new(ConnState::for_server(self.server.as_deref())),
            ..self.clone()
        }
    }

    fn for_queue(&self, queue: &QueueName, prefix: Option<&Prefix>) -> Self {
        self.sibling(queue.clone(), prefix.cloned())
    }

    fn qualified_name(&self) -> &str {
        &self.keys().qualified_name
    }

    fn bound_queue(&self) -> Option<&QueueName> {
        Some(self.queue())
    }

    fn to_key(&self, part: &str) -> String {
        self.keys().to_key(part)
    }

    fn parse_node_key(&self, key: &str) -> Option<NodeKey> {
        parse_node_key(key)
    }

    /// `<prefix>:<base64(queue)>`, base64 with padding as Node.js' `Buffer#toString('base64')`,
    /// then `:w:<name>` for a named worker or `:qe` for `QueueEvents`.
    fn client_name(&self, role: &ClientRole) -> String {
        let base = format!(
            "{}:{}",
            self.prefix(),
            STANDARD.encode(self.queue().as_str())
        );
        match role {
            ClientRole::Worker { name: Some(name) } if !name.is_empty() => {
                format!("{base}:w:{name}")
            }
            ClientRole::QueueEvents => format!("{base}:qe"),
            ClientRole::Queue | ClientRole::Worker { .. } => base,
        }
    }

    /// 1 ms to 10 s as in Node.js; 2 ms minimum on Redis before 7.0.8 (known once the blocking
    /// connection has been opened).
    fn block_timeouts(&self) -> BlockTimeouts {
        let minimum = if self.conn_state().capabilities().can_block_for_1ms {
            MINIMUM_BLOCK
        } else {
            MINIMUM_BLOCK_OLD_REDIS
        };
        BlockTimeouts {
            minimum,
            maximum: MAXIMUM_BLOCK,
        }
    }

    fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::{Capabilities, parse_node_key};
    use crate::server::ServerInfo;

    #[test]
    fn node_keys_split_on_the_last_two_colons() {
        let k = parse_node_key("bull:q:7").expect("a node key");
        assert_eq!(
            (k.prefix.as_str(), k.queue.as_str(), k.id.as_str()),
            ("bull", "q", "7")
        );
        let k = parse_node_key("{a:b}:c:q:x1").expect("a node key");
        assert_eq!(
            (k.prefix.as_str(), k.queue.as_str(), k.id.as_str()),
            ("{a:b}:c", "q", "x1")
        );
        assert_eq!(parse_node_key("bull:q").map(|k| k.id), None);
        assert_eq!(parse_node_key("bull::7"), None);
        assert_eq!(parse_node_key("bull:q:"), None);
        assert_eq!(parse_node_key("plain"), None);
    }

    #[test]
    fn capabilities_follow_the_redis_version() {
        let caps = |v: &str| {
            Capabilities::of(&ServerInfo::from_info(&format!(
                "# Server\r\nredis_version:{v}\r\n"
            )))
        };
        assert!(!caps("5.0.14").can_double_timeout);
        assert!(caps("6.2.0").can_double_timeout && !caps("6.2.0").can_block_for_1ms);
        assert!(!caps("7.0.7").can_block_for_1ms);
        assert!(caps("7.0.8").can_block_for_1ms && caps("7.4.1").can_double_timeout);
        let valkey = Capabilities::of(&ServerInfo::from_info(
            "redis_version:6.2.0\r\nvalkey_version:8.0.1\r\n",
        ));
        assert!(valkey.can_block_for_1ms);
    }
}
