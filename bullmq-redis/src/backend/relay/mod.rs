//! `RelayStore` for Redis: upstream's `relay*` Lua scripts, as its `RedisRelayBackend` calls
//! them. A namespace's keys live under `<prefix>::relay:{<namespace>}` (the namespace a hash
//! tag: one slot on a cluster, which the handle's connection is routed to); the prefix's
//! registry of namespaces, `<prefix>::relay:namespaces`, may be in another slot and is
//! written in a call of its own. Each node's inbox is a stream, read by the script (atomic
//! with publish-time trimming) after a blocking `XREAD` on the handle's dedicated connection,
//! named `base64(<base key>):<node id>` as Node.js names it.

mod cursor;
mod getters;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bullmq_core::backend::{RelayStore, node_info_json};
use bullmq_core::relay::{
    RelayCounts, RelayError, RelayId, RelayInboxBatch, RelayInboxEntry, RelayNodeConnection,
    RelayNodeInfo, RelayNodeState, RelayPatternState, RelayPublishArgs, RelayPublished,
    RelayRetainedMessage, RelayRetainedState, RelaySubscribed, RelaySubscriptionFilter,
    RelaySubscriptionState,
};
use bullmq_core::{Error, Result};
use redis::Value;

use super::RedisBackend;
use crate::connection::slot;
use crate::connection::{ConnState, Dedicated};
use crate::reply;
use crate::script::ScriptCall;
use crate::scripts::{self, LuaScript};
use crate::wire::ms;
use getters::{
    NO_FILTER, node_row, pattern_row, retained_row, subscription_filter, subscription_row,
};

/// The relay's Redis data layout version (upstream's `RELAY_LAYOUT_VERSION`).
const LAYOUT_VERSION: &str = "1";

/// The inbox length a publish enforces on nodes that registered none (upstream's default;
/// every node registers its own).
const DEFAULT_INBOX_MAX_LENGTH: u64 = 10_000;

/// How long past its own timeout a blocked `XREAD` is given before the watchdog drops it.
const WATCHDOG_MARGIN: Duration = Duration::from_secs(1);

/// A namespace's keys, and the inbox connection's state, shared by a relay handle's clones.
#[derive(Debug)]
pub(crate) struct RelayKeys {
    namespace: String,
    /// `<prefix>::relay:{<namespace>}`.
    base: String,
    /// `<base>:nodes`.
    nodes: String,
    /// `<prefix>::relay:namespaces`.
    registry: String,
    /// Set on close: reads return at once, empty.
    interrupted: AtomicBool,
    /// Until when the registry lists the namespace (Unix ms), as far as this handle wrote it.
    listed_until: AtomicU64,
    /// Set when a heartbeat finds the node gone, and its inbox with it: the next
    /// registration makes a new one.
    inbox_lost: AtomicBool,
    /// Which inbox the node reads (see [`cursor`]): bumped when it registers after losing one.
    inbox_generation: AtomicU64,
}

impl RelayKeys {
    fn new(prefix: &str, namespace: &str) -> Self {
        let base = namespace_key(prefix, namespace);
        Self {
            namespace: namespace.to_owned(),
            nodes: format!("{base}:nodes"),
            registry: format!("{prefix}::relay:namespaces"),
            base,
            interrupted: AtomicBool::new(false),
            listed_until: AtomicU64::new(0),
            inbox_lost: AtomicBool::new(false),
            inbox_generation: AtomicU64::new(0),
        }
    }
}

fn namespace_key(prefix: &str, namespace: &str) -> String {
    format!("{prefix}::relay:{{{namespace}}}")
}

/// The client name of a node's inbox connection (upstream's `inboxConnectionName`).
fn inbox_name(base: &str, node: &str) -> String {
    format!("{}:{node}", STANDARD.encode(base))
}

/// Refuses a script's negative answer with upstream's relay error.
fn checked<'a>(v: &'a Value, detail: &str) -> Result<&'a Value> {
    match reply::int(v) {
        Some(code) if code < 0 => Err(Error::Relay(RelayError::new(code, detail))),
        _ => Ok(v),
    }
}

impl RedisBackend {
    fn relay_keys(&self) -> Result<&RelayKeys> {
        bullmq_core::relay::bound(self.relay.as_deref())
    }

    /// Runs a relay script with upstream's `KEYS[1] = <base>:nodes`, `ARGV[1] = <base>`.
    async fn relay_run(
        &self,
        script: &LuaScript,
        what: &'static str,
        args: impl FnOnce(ScriptCall) -> ScriptCall,
    ) -> Result<Value> {
        let keys = self.relay_keys()?;
        let call = args(ScriptCall::default().key(&keys.nodes).arg(&keys.base));
        self.run(call, script, what).await
    }

    /// Lists the namespace in the prefix's registry until `for_ms` from now (upstream's
    /// `touchNamespace`). Only dashboards read the registry, so a failure is logged, not
    /// returned.
    async fn touch_namespace(&self, for_ms: u64) {
        let Ok(keys) = self.relay_keys() else { return };
        let until = self.now_ms().saturating_add(for_ms);
        if keys.listed_until.fetch_max(until, Ordering::SeqCst) >= until {
            return;
        }
        let registry = self.registry_connection(keys);
        let call = ScriptCall::default()
            .key(&keys.registry)
            .arg(&keys.namespace)
            .arg(for_ms.max(1));
        if let Err(e) = call
            .invoke(&registry, &scripts::RELAY_TOUCH_NAMESPACE)
            .await
        {
            tracing::warn!(namespace = %keys.namespace, error = %e, "relay: listing the namespace failed");
            keys.listed_until.store(0, Ordering::SeqCst);
        }
    }

    /// The connection for the registry key, which a cluster may hold in another slot.
    fn registry_connection(&self, keys: &RelayKeys) -> crate::connection::SharedConnection {
        self.con.for_slot(slot(keys.registry.as_bytes()))
    }
}

impl RelayStore for RedisBackend {
    fn relay_handle(&self, namespace: &RelayId, node: Option<&RelayId>) -> Self {
        let keys = RelayKeys::new(self.prefix.as_str(), namespace.as_str());
        let con = self.con.for_slot(slot(keys.base.as_bytes()));
        let name = node.map(|n| inbox_name(&keys.base, n.as_str()));
        let state = ConnState::default().with_blocking_name(name);
        Self {
            con,
            state: Arc::new(state),
            relay: Some(Arc::new(keys)),
            ..self.clone()
        }
    }

    fn relay_initial_cursor(&self) -> &'static str {
        cursor::START
    }

    async fn relay_register_node(
        &self,
        node: &RelayId,
        lease: Duration,
        info: &RelayNodeInfo,
        inbox_max_length: u64,
    ) -> Result<()> {
        let info = node_info_json(info)?;
        // Before the script makes the new inbox, so that a read in flight sees the change.
        if let Some(keys) = self.relay.as_deref()
            && keys.inbox_lost.swap(false, Ordering::SeqCst)
        {
            keys.inbox_generation.fetch_add(1, Ordering::SeqCst);
        }
        // A reused id must finish pruning its old subscriptions first: each call prunes a
        // bounded batch and answers 0 while some are left.
        loop {
            let v = self
                .relay_run(
                    &scripts::RELAY_REGISTER_NODE,
                    "register a relay node",
                    |c| {
                        c.arg(node.as_str())
                            .arg(ms(lease))
                            .arg(&info)
                            .arg(LAYOUT_VERSION)
                            .arg(inbox_max_length)
                    },
                )
                .await?;
            if reply::int(checked(&v, node.as_str())?) != Some(0) {
                break;
            }
        }
        self.touch_namespace(ms(lease)).await;
        Ok(())
    }

    async fn relay_heartbeat(&self, node: &RelayId, lease: Duration) -> Result<bool> {
        let v = self
            .relay_run(&scripts::RELAY_HEARTBEAT, "renew a relay lease", |c| {
                c.arg(node.as_str()).arg(ms(lease))
            })
            .await?;
        let alive = reply::int(&v) == Some(1);
        if alive {
            self.touch_namespace(ms(lease)).await;
        } else if let Some(keys) = self.relay.as_deref() {
            keys.inbox_lost.store(true, Ordering::SeqCst);
        }
        Ok(alive)
    }

    async fn relay_unregister_node(&self, node: &RelayId) -> Result<bool> {
        let v = self
            .relay_run(
                &scripts::RELAY_UNREGISTER_NODE,
                "unregister a relay node",
                |c| c.arg(node.as_str()),
            )
            .await?;
        Ok(reply::int(checked(&v, node.as_str())?) == Some(1))
    }

    async fn relay_sweep(&self, limit: u32) -> Result<Vec<String>> {
        let v = self
            .relay_run(&scripts::RELAY_SWEEP, "sweep relay nodes", |c| c.arg(limit))
            .await?;
        Ok(reply::text_items(&v))
    }

    async fn relay_subscribe(
        &self,
        node: &RelayId,
        endpoint: &RelayId,
        pattern: &str,
    ) -> Result<RelaySubscribed> {
        let v = self
            .relay_run(
                &scripts::RELAY_SUBSCRIBE,
                "subscribe to a relay pattern",
                |c| c.arg(node.as_str()).arg(endpoint.as_str()).arg(pattern),
            )
            .await?;
        let parts = reply::items(checked(&v, pattern)?);
        let field = |i: usize| parts.get(i).and_then(reply::text).unwrap_or_default();
        let mid = field(1);
        Ok(RelaySubscribed {
            added: parts.first().and_then(reply::int) == Some(1),
            retained: (!mid.is_empty()).then(|| RelayRetainedMessage {
                mid,
                ts: field(2).parse().unwrap_or(0),
                data: field(3),
            }),
        })
    }

    async fn relay_remove_endpoint(&self, node: &RelayId, endpoint: &RelayId) -> Result<u64> {
        let v = self
            .relay_run(
                &scripts::RELAY_REMOVE_ENDPOINT,
                "unsubscribe a relay endpoint",
                |c| c.arg(node.as_str()).arg(endpoint.as_str()),
            )
            .await?;
        Ok(reply::count(checked(&v, endpoint.as_str())?))
    }

    async fn relay_publish(
        &self,
        topic: &str,
        data: &str,
        args: RelayPublishArgs,
    ) -> Result<RelayPublished> {
        let v = self
            .relay_run(&scripts::RELAY_PUBLISH, "publish a relay message", |c| {
                c.arg(topic)
                    .arg(data)
                    .arg(args.ts)
                    .arg(args.retain_ms)
                    .arg(args.max_size)
                    .arg(DEFAULT_INBOX_MAX_LENGTH)
            })
            .await?;
        let parts = reply::items(checked(&v, topic)?);
        if args.retain_ms > 0 {
            self.touch_namespace(args.retain_ms).await;
        }
        Ok(RelayPublished {
            mid: parts.first().and_then(reply::text).unwrap_or_default(),
            nodes: parts.get(1).map_or(0, reply::count),
            endpoints: parts.get(2).map_or(0, reply::count),
        })
    }

    async fn relay_delete_retained(&self, topic: &str) -> Result<bool> {
        let v = self
            .relay_run(
                &scripts::RELAY_DELETE_RETAINED,
                "delete a retained message",
                |c| c.arg(topic),
            )
            .await?;
        Ok(reply::int(checked(&v, topic)?) == Some(1))
    }

    async fn relay_read_inbox(
        &self,
        node: &RelayId,
        cursor: &str,
        block: Duration,
        count: u32,
    ) -> Result<RelayInboxBatch> {
        let keys = self.relay_keys()?;
        let empty = || RelayInboxBatch {
            entries: Vec::new(),
            cursor: cursor.to_owned(),
        };
        if keys.interrupted.load(Ordering::SeqCst) {
            return Ok(empty());
        }
        let generation = keys.inbox_generation.load(Ordering::SeqCst);
        let from = cursor::stream_id(cursor, generation);
        let read = || {
            self.relay_run(&scripts::RELAY_READ_INBOX, "read a relay inbox", |c| {
                c.arg(node.as_str()).arg(from).arg(count)
            })
        };
        let mut v = read().await?;
        if matches!(v, Value::Nil) && !block.is_zero() {
            // The blocking read only wakes us: taking and marking the batch must be atomic
            // with publish-time trimming, which the script is.
            let inbox = format!("{}:{}:inbox", keys.base, node.as_str());
            let mut cmd = redis::cmd("XREAD");
            cmd.arg("BLOCK")
                .arg(ms(block))
                .arg("COUNT")
                .arg(1)
                .arg("STREAMS")
                .arg(&inbox)
                .arg(from);
            // An interrupt landing since the flag was read (during the read above) finds no
            // wait to wake: the flag, read again once the wait listens, catches it.
            let woken = self
                .blocking_call_unless(
                    Dedicated::Blocking,
                    &cmd,
                    block + WATCHDOG_MARGIN,
                    "wait on a relay inbox",
                    || keys.interrupted.load(Ordering::SeqCst),
                )
                .await?;
            if woken.is_none() || keys.interrupted.load(Ordering::SeqCst) {
                return Ok(empty());
            }
            v = read().await?;
        }
        if keys.inbox_generation.load(Ordering::SeqCst) != generation {
            // Read across a new registration: the entries may be the old inbox's, the cursor
            // is. Read again, from the new inbox's start.
            return Ok(empty());
        }
        let mut batch = inbox_batch(&v, from);
        batch.cursor = cursor::tagged(generation, &batch.cursor);
        Ok(batch)
    }

    async fn relay_interrupt_inbox(&self) {
        if let Some(keys) = self.relay.as_deref() {
            keys.interrupted.store(true, Ordering::SeqCst);
        }
        let state = self.conn_state();
        state.drop_dedicated(Dedicated::Blocking).await;
    }

    async fn relay_trim_inbox(&self, node: &RelayId, cursor: &str, max_length: u64) -> Result<u64> {
        let generation = self.relay_keys()?.inbox_generation.load(Ordering::SeqCst);
        // A cursor of a lost inbox has consumed nothing of this one.
        let consumed = cursor::stream_id(cursor, generation);
        let v = self
            .relay_run(&scripts::RELAY_TRIM_INBOX, "trim a relay inbox", |c| {
                c.arg(node.as_str()).arg(consumed).arg(max_length)
            })
            .await?;
        Ok(reply::count(&v))
    }

    async fn relay_counts(&self) -> Result<RelayCounts> {
        self.relay_get_counts().await
    }

    async fn relay_nodes(&self, start: i64, end: i64) -> Result<Vec<RelayNodeState>> {
        self.relay_get_rows("nodes", start, end, NO_FILTER, node_row)
            .await
    }

    async fn relay_subscriptions(
        &self,
        filter: Option<&RelaySubscriptionFilter>,
        start: i64,
        end: i64,
    ) -> Result<Vec<RelaySubscriptionState>> {
        let filter = subscription_filter(filter);
        self.relay_get_rows("subscriptions", start, end, filter, subscription_row)
            .await
    }

    async fn relay_patterns(&self, start: i64, end: i64) -> Result<Vec<RelayPatternState>> {
        self.relay_get_rows("patterns", start, end, NO_FILTER, pattern_row)
            .await
    }

    async fn relay_retained(&self, start: i64, end: i64) -> Result<Vec<RelayRetainedState>> {
        self.relay_get_rows("retained", start, end, NO_FILTER, retained_row)
            .await
    }

    async fn relay_namespaces(&self) -> Result<Vec<String>> {
        self.relay_get_namespaces().await
    }

    async fn relay_node_connections(&self, node: &RelayId) -> Result<Vec<RelayNodeConnection>> {
        let base = &self.relay_keys()?.base;
        self.relay_get_node_connections(&inbox_name(base, node.as_str()))
            .await
    }

    async fn relay_close(&self) -> Result<()> {
        self.relay_interrupt_inbox().await;
        Ok(())
    }
}

/// `relayReadInbox`'s reply (an `XREAD` reply, or nil) as a batch.
fn inbox_batch(v: &Value, cursor: &str) -> RelayInboxBatch {
    let mut batch = RelayInboxBatch {
        entries: Vec::new(),
        cursor: cursor.to_owned(),
    };
    let streams = reply::items(v);
    let Some(stream) = streams.first() else {
        return batch;
    };
    let Some(entries) = reply::items(stream).get(1) else {
        return batch;
    };
    for entry in reply::items(entries) {
        let [id, fields] = reply::items(entry) else {
            continue;
        };
        let Some(id) = reply::text(id) else { continue };
        let mut e = RelayInboxEntry {
            kind: String::new(),
            topic: String::new(),
            mid: String::new(),
            ts: 0,
            data: String::new(),
            endpoints: Vec::new(),
        };
        for (name, value) in reply::text_pairs(fields) {
            match name.as_str() {
                "k" => e.kind = value,
                "t" => e.topic = value,
                "m" => e.mid = value,
                "ts" => e.ts = value.parse().unwrap_or(0),
                "d" => e.data = value,
                "e" if !value.is_empty() => {
                    e.endpoints = value.split(',').map(str::to_owned).collect();
                }
                _ => {}
            }
        }
        batch.cursor = id;
        batch.entries.push(e);
    }
    batch
}
