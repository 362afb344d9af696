//! `Lifecycle` for Redis: readiness, closing, client names and keys. The dedicated
//! connections the blocking commands run on are `connection::dedicated`'s; this names them.
//!
//! # Client names
//!
//! Node.js names the connections that `getWorkers()` looks for: a worker's blocking connection
//! `<prefix>:<base64(queue)>` (with `:w:<name>` for a named worker), and `QueueEvents`'
//! connection `…:qe`. We name the same dedicated connections, and only those: the shared
//! connection stays unnamed, as a Node.js `Queue`'s does.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bullmq_core::backend::{BlockTimeouts, ClientRole, Lifecycle, NodeKey};
use bullmq_core::clock::Clock;
use bullmq_core::{Prefix, QueueName, Result};
use redis::aio::MultiplexedConnection;

use super::RedisBackend;
use crate::connection::{ConnState, Dedicated};
use crate::error::wrap;
use crate::server::ServerInfo;

/// The shortest blocking wait Redis honours before 7.0.8: 1 ms (upstream's minimum) read as
/// zero there, which means "forever", so Node.js uses 2 ms.
const MINIMUM_BLOCK_OLD_REDIS: Duration = Duration::from_millis(2);

/// What the server can do with blocking timeouts (Node.js' `capabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Capabilities {
    /// Fractional seconds are accepted (Redis 6.0 and later).
    pub(crate) can_double_timeout: bool,
    /// A 1 ms timeout is honoured (Redis 7.0.8 and later).
    pub(crate) can_block_for_1ms: bool,
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

impl RedisBackend {
    /// This backend's dedicated connections (shared with its clones).
    pub(crate) fn conn_state(&self) -> Arc<ConnState> {
        Arc::clone(&self.state)
    }

    /// What the server can do with blocking timeouts.
    pub(crate) fn capabilities(&self) -> Capabilities {
        self.server
            .as_deref()
            .map_or(Capabilities::ASSUMED, Capabilities::of)
    }

    /// A handle on a dedicated connection of `state`, opened and named first if there is none.
    pub(crate) async fn dedicated(
        &self,
        state: &ConnState,
        which: Dedicated,
    ) -> Result<MultiplexedConnection> {
        let worker = || self.client_name(&ClientRole::Worker { name: None });
        state
            .dedicated(&self.con, which, self.response_timeout(), worker)
            .await
    }
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
        state.set_closing();
        state.drop_dedicated(Dedicated::Blocking).await;
        state.drop_dedicated(Dedicated::Events).await;
        Ok(())
    }

    /// Drops both dedicated connections (interrupting any wait); unlike [`close`](Self::close)
    /// the backend stays usable and reopens them on next use.
    async fn disconnect(&self) -> Result<()> {
        let state = self.conn_state();
        state.drop_dedicated(Dedicated::Blocking).await;
        state.drop_dedicated(Dedicated::Events).await;
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
        state
            .rename(
                &self.con,
                which,
                self.client_name(&role),
                self.response_timeout(),
            )
            .await
    }

    fn is_closing(&self) -> bool {
        self.conn_state().is_closing()
    }

    fn handle(&self) -> Self {
        Self {
            state: Arc::default(),
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
        if self.capabilities().can_block_for_1ms {
            BlockTimeouts::UPSTREAM
        } else {
            BlockTimeouts {
                minimum: MINIMUM_BLOCK_OLD_REDIS,
                ..BlockTimeouts::UPSTREAM
            }
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
