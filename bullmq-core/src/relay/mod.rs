//! The relay: fleet-wide publish/subscribe, as Node.js BullMQ 6.7's `Relay` (experimental
//! upstream, and here: it follows upstream 6.7.6 and may change with it).
//!
//! Any process publishes on a topic and every subscription matching it receives the message,
//! wherever it runs. Topics are dot-separated keypaths (`queues.emails.jobs.42.progress`);
//! patterns use `*` (one segment) and `>` (one or more trailing segments). The routing is the
//! store's (upstream's `relay*` Lua scripts, its `relay_*` SQL functions), behind
//! [`RelayStore`](crate::backend::RelayStore): this type registers the node with a lease,
//! renews it, sweeps expired nodes, reads its inbox and calls handlers, as upstream's `Relay`
//! class does.
//!
//! ```no_run
//! # async fn run(backend: impl bullmq_core::backend::Backend) -> bullmq_core::Result<()> {
//! use bullmq_core::relay::{Relay, RelayOptions};
//!
//! let relay = Relay::new(&backend, RelayOptions::new().name("api")).await?;
//! let sub = relay
//!     .subscribe("queues.*.jobs.>", |m: bullmq_core::relay::RelayMessage<serde_json::Value>| {
//!         println!("{} {}", m.topic, m.data);
//!     })
//!     .await?;
//! relay.publish("queues.emails.jobs.42.progress", &50, None).await?;
//! sub.unsubscribe().await?;
//! relay.close().await;
//! # Ok(()) }
//! ```

mod endpoint;
mod node;
mod options;
mod topic;
mod types;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

pub use options::{MAX_NAME_LENGTH, RelayOptions};
pub use topic::{
    MAX_ID_LENGTH, MAX_TOPIC_LENGTH, MAX_TOPIC_SEGMENTS, check_pattern, check_topic, has_wildcards,
    matches,
};
pub use types::{
    RelayCounts, RelayError, RelayErrorCode, RelayId, RelayInboxBatch, RelayInboxEntry,
    RelayNodeConnection, RelayNodeInfo, RelayNodeState, RelayPatternState, RelayPublishArgs,
    RelayPublished, RelayRetainedMessage, RelayRetainedState, RelaySubscribed,
    RelaySubscriptionFilter, RelaySubscriptionState,
};

use crate::backend::Backend;
use crate::options::ValidationError;
use crate::{Error, Result};
use endpoint::{Endpoint, RawMessage};

/// The upstream version whose relay this one follows (and whose scripts and SQL it runs).
pub const UPSTREAM_VERSION: &str = "6.7.6";

/// A message as a handler receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayMessage<T> {
    /// The topic it was published on (for a retained message, the subscribed topic).
    pub topic: String,
    /// Its data, parsed from the JSON the publisher wrote.
    pub data: T,
    /// Its id, unique and increasing per namespace.
    pub mid: String,
    /// When it was published (Unix ms, the publisher's clock).
    pub ts: u64,
    /// True when delivered from the topic's retained value on subscribing.
    pub retained: bool,
}

/// What a relay reports as it runs (upstream's events).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RelayEvent {
    /// A background step failed (a heartbeat, a read, a sweep) or a message could not be
    /// delivered; the relay carries on.
    Error(Arc<Error>),
    /// The node registered again after its lease ended, and its subscriptions are restored.
    Recovered,
    /// This node swept these expired nodes.
    Swept(Vec<String>),
    /// This node's unread backlog reached the lag threshold.
    Lag(u64),
    /// A handler panicked on this message; the relay carries on.
    HandlerPanicked {
        /// The message's topic.
        topic: String,
        /// The message's id.
        mid: String,
    },
}

/// One node of the relay: see the [module](self).
///
/// Closing ([`close`](Self::close)) unsubscribes and deregisters the node; a relay dropped
/// without it is closed in the background.
pub struct Relay<B: Backend> {
    inner: Arc<Inner<B>>,
}

impl<B: Backend> std::fmt::Debug for Relay<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("namespace", &self.inner.o.namespace)
            .field("node_id", &self.inner.o.node_id)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner<B: Backend> {
    store: B,
    o: options::Resolved,
    info: RelayNodeInfo,
    endpoints: Mutex<HashMap<String, Endpoint>>,
    cursor: Mutex<String>,
    /// Bumped when a recovery replaces the node's registration.
    registration: AtomicU64,
    recovery_pending: AtomicBool,
    batch_in_flight: AtomicBool,
    closing: CancellationToken,
    /// One heartbeat (or recovery) at a time.
    heartbeat_lock: tokio::sync::Mutex<()>,
    /// One inbox trim at a time; the read loop waits for it before reading.
    backlog_lock: tokio::sync::Mutex<()>,
    /// Held while messages are handed to handlers, so each endpoint sees them in order.
    dispatch_lock: tokio::sync::Mutex<()>,
    events: broadcast::Sender<RelayEvent>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    closed: tokio::sync::Mutex<bool>,
}

/// A subscription; [`unsubscribe`](Self::unsubscribe) ends it (closing the relay ends them
/// all).
pub struct RelaySubscription<B: Backend> {
    inner: Arc<Inner<B>>,
    endpoint: RelayId,
    pattern: String,
    active: Arc<AtomicBool>,
}

impl<B: Backend> std::fmt::Debug for RelaySubscription<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelaySubscription")
            .field("pattern", &self.pattern)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> RelaySubscription<B> {
    /// The pattern subscribed to.
    #[must_use]
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The endpoint id the store knows this subscription by.
    #[must_use]
    pub fn endpoint_id(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Ends the subscription: nothing more is delivered to its handler.
    ///
    /// # Errors
    ///
    /// The store's failure; nothing is delivered to the handler any more all the same.
    pub async fn unsubscribe(&self) -> Result<()> {
        self.active.store(false, Ordering::SeqCst);
        self.inner.remove_endpoint(&self.endpoint).await
    }
}

/// The error a store gives for a relay operation on a backend that no
/// [`RelayStore::relay_handle`](crate::backend::RelayStore::relay_handle) bound to a namespace.
#[must_use]
pub fn unbound_error() -> Error {
    ValidationError::single(
        "relay",
        "backend",
        "is not bound to a relay namespace: use the handle relay_handle returns",
    )
    .into()
}

/// What a store's relay operations run against: the namespace `binding` it was bound to, or
/// [`unbound_error`] for a backend that no relay handle bound.
///
/// ```
/// let bound: Option<&str> = Some("bull:relay");
/// assert_eq!(bullmq_core::relay::bound(bound).unwrap(), "bull:relay");
/// assert!(bullmq_core::relay::bound::<str>(None).is_err());
/// ```
pub fn bound<T: ?Sized>(binding: Option<&T>) -> crate::Result<&T> {
    binding.ok_or_else(unbound_error)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn check_range(start: i64, end: i64) -> Result<()> {
    if start < 0 || end < -1 {
        return Err(ValidationError::single(
            "relay range",
            "start..end",
            format!("must be start >= 0 and end >= -1 (got {start}..{end})"),
        )
        .into());
    }
    Ok(())
}

impl<B: Backend> Relay<B> {
    /// Starts a node on `backend`'s store: checks the options, registers the node (waiting
    /// for the store), then renews its lease, sweeps expired nodes and reads its inbox in the
    /// background.
    ///
    /// # Errors
    ///
    /// An invalid option (naming it), or the store's failure to register the node.
    pub async fn new(backend: &B, options: RelayOptions) -> Result<Self> {
        let o = options.resolve()?;
        let store = backend.relay_handle(&o.namespace, Some(&o.node_id));
        let info = RelayNodeInfo {
            name: o.name.clone(),
            host: node::host_name(),
            pid: Some(u64::from(std::process::id())),
            version: Some(UPSTREAM_VERSION.to_owned()),
        };
        let cursor = store.relay_initial_cursor().to_owned();
        let (events, _) = broadcast::channel(256);
        let inner = Arc::new(Inner {
            store,
            o,
            info,
            endpoints: Mutex::default(),
            cursor: Mutex::new(cursor),
            registration: AtomicU64::new(0),
            recovery_pending: AtomicBool::new(false),
            batch_in_flight: AtomicBool::new(false),
            closing: CancellationToken::new(),
            heartbeat_lock: tokio::sync::Mutex::new(()),
            backlog_lock: tokio::sync::Mutex::new(()),
            dispatch_lock: tokio::sync::Mutex::new(()),
            events,
            tasks: Mutex::default(),
            closed: tokio::sync::Mutex::new(false),
        });
        if let Err(e) = inner.register().await {
            let _ = inner.store.relay_close().await;
            return Err(e);
        }
        node::start(&inner);
        Ok(Self { inner })
    }

    /// This node's id.
    #[must_use]
    pub fn node_id(&self) -> &str {
        self.inner.o.node_id.as_str()
    }

    /// The namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        self.inner.o.namespace.as_str()
    }

    /// The relay's events from now on.
    #[must_use]
    pub fn events(&self) -> broadcast::Receiver<RelayEvent> {
        self.inner.events.subscribe()
    }

    /// Subscribes `handler` to a topic or pattern. For an exact topic, its retained message
    /// (if any) is delivered first, with `retained: true`. The handler runs on the relay's
    /// read loop, one message at a time: hand long work to a task of its own.
    ///
    /// # Errors
    ///
    /// An invalid pattern (naming the fault), a closed relay, or the store's failure.
    pub async fn subscribe<T, F>(&self, pattern: &str, handler: F) -> Result<RelaySubscription<B>>
    where
        T: DeserializeOwned + Send + 'static,
        F: Fn(RelayMessage<T>) + Send + Sync + 'static,
    {
        check_pattern(pattern)?;
        self.inner.assert_open()?;
        let endpoint_id = RelayId::random();
        let active = Arc::new(AtomicBool::new(true));
        let deliver = endpoint::typed(handler, self.inner.events.clone());
        // Registered first, so live messages arriving while subscribing wait for the retained
        // one.
        lock(&self.inner.endpoints).insert(
            endpoint_id.as_str().to_owned(),
            Endpoint {
                pattern: pattern.to_owned(),
                deliver: Arc::clone(&deliver),
                active: Arc::clone(&active),
                pending: Some(Vec::new()),
            },
        );
        let subscribed = self
            .inner
            .store
            .relay_subscribe(&self.inner.o.node_id, &endpoint_id, pattern)
            .await
            .and_then(|s| self.inner.assert_open().map(|()| s));
        match subscribed {
            Ok(subscribed) => {
                let _dispatching = self.inner.dispatch_lock.lock().await;
                let pending = lock(&self.inner.endpoints)
                    .get_mut(endpoint_id.as_str())
                    .and_then(|e| e.pending.take())
                    .unwrap_or_default();
                let cutoff = subscribed
                    .retained
                    .as_ref()
                    .map_or(0, |r| r.mid.parse().unwrap_or(0));
                if let Some(r) = subscribed.retained {
                    let message = RawMessage {
                        topic: pattern.to_owned(),
                        mid: r.mid,
                        ts: r.ts,
                        data: r.data,
                        retained: true,
                    };
                    Endpoint::deliver(&deliver, &active, message);
                }
                // Live copies of the retained message (or older) are skipped; buffered ones are
                // not compared with each other (publishes on other topics may commit out of
                // id order).
                for message in pending {
                    if message.mid_number() > cutoff {
                        Endpoint::deliver(&deliver, &active, message);
                    }
                }
            }
            Err(e) => {
                active.store(false, Ordering::SeqCst);
                if let Some(ep) = lock(&self.inner.endpoints).get_mut(endpoint_id.as_str()) {
                    ep.pending = None;
                }
                if let Err(cleanup) = self.inner.remove_endpoint(&endpoint_id).await {
                    self.inner.recovery_pending.store(true, Ordering::SeqCst);
                    self.inner.emit_error(cleanup);
                }
                return Err(e);
            }
        }
        Ok(RelaySubscription {
            inner: Arc::clone(&self.inner),
            endpoint: endpoint_id,
            pattern: pattern.to_owned(),
            active,
        })
    }

    /// Publishes `data`, as JSON written as `JSON.stringify` writes it, on a concrete topic;
    /// with `retain`, the message is kept that long as the topic's retained value, delivered
    /// first to new subscribers of that exact topic.
    ///
    /// # Errors
    ///
    /// An invalid topic (naming the fault), data that does not serialize or is over the
    /// maximum message size, a closed relay, or the store's failure.
    pub async fn publish<T: Serialize + ?Sized>(
        &self,
        topic: &str,
        data: &T,
        retain: Option<Duration>,
    ) -> Result<RelayPublished> {
        check_topic(topic)?;
        self.inner.assert_open()?;
        let serialized = crate::json::to_string(data).map_err(|e| {
            ValidationError::single("relay message", "data", format!("does not serialize: {e}"))
        })?;
        let size = serialized.len() as u64;
        if size > self.inner.o.max_message_size {
            return Err(ValidationError::single(
                "relay message",
                "data",
                format!(
                    "is {size} bytes serialized, over max_message_size ({}): send less, or raise \
                     the option",
                    self.inner.o.max_message_size
                ),
            )
            .into());
        }
        let retain_ms = retain.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let args = RelayPublishArgs {
            ts: self.inner.store.clock().now_ms(),
            retain_ms,
            max_size: self.inner.o.max_message_size,
        };
        self.inner
            .store
            .relay_publish(topic, &serialized, args)
            .await
    }

    /// Deletes a topic's retained message: new subscribers no longer get it. False when it
    /// had none.
    ///
    /// # Errors
    ///
    /// An invalid topic, a closed relay, or the store's failure.
    pub async fn delete_retained(&self, topic: &str) -> Result<bool> {
        check_topic(topic)?;
        self.inner.assert_open()?;
        self.inner.store.relay_delete_retained(topic).await
    }

    /// The namespace's totals, for dashboards.
    ///
    /// # Errors
    ///
    /// The store's failure.
    pub async fn counts(&self) -> Result<RelayCounts> {
        self.inner.store.relay_counts().await
    }

    /// Nodes, in registration order; `start` and `end` are inclusive positions, `end` -1
    /// meaning "to the end".
    ///
    /// # Errors
    ///
    /// A bad range, or the store's failure.
    pub async fn nodes(&self, start: i64, end: i64) -> Result<Vec<RelayNodeState>> {
        check_range(start, end)?;
        self.inner.store.relay_nodes(start, end).await
    }

    /// Subscriptions, all or a node's or a pattern's.
    ///
    /// # Errors
    ///
    /// A bad range, or the store's failure.
    pub async fn subscriptions(
        &self,
        filter: Option<&RelaySubscriptionFilter>,
        start: i64,
        end: i64,
    ) -> Result<Vec<RelaySubscriptionState>> {
        check_range(start, end)?;
        self.inner
            .store
            .relay_subscriptions(filter, start, end)
            .await
    }

    /// Subscribed patterns, by pattern, with their subscriptions.
    ///
    /// # Errors
    ///
    /// A bad range, or the store's failure.
    pub async fn patterns(&self, start: i64, end: i64) -> Result<Vec<RelayPatternState>> {
        check_range(start, end)?;
        self.inner.store.relay_patterns(start, end).await
    }

    /// Retained messages, by expiry (their data as serialized).
    ///
    /// # Errors
    ///
    /// A bad range, or the store's failure.
    pub async fn retained(&self, start: i64, end: i64) -> Result<Vec<RelayRetainedState>> {
        check_range(start, end)?;
        self.inner.store.relay_retained(start, end).await
    }

    /// Namespaces in use in the store (the Redis prefix, the PostgreSQL schema).
    ///
    /// # Errors
    ///
    /// The store's failure.
    pub async fn namespaces(&self) -> Result<Vec<String>> {
        self.inner.store.relay_namespaces().await
    }

    /// A node's inbox connection (this node's when `None`) as the store sees it. Lists every
    /// client of the store: use it on demand, not on a timer.
    ///
    /// # Errors
    ///
    /// An invalid id, or the store's failure.
    pub async fn node_connections(&self, node: Option<&str>) -> Result<Vec<RelayNodeConnection>> {
        let node = match node {
            Some(id) => RelayId::new("node_id", id)?,
            None => self.inner.o.node_id.clone(),
        };
        self.inner.store.relay_node_connections(&node).await
    }

    /// Stops the node: no more deliveries, its timers and read loop end, and it is
    /// deregistered with its subscriptions. A deregistration that fails is reported as an
    /// event; the node's lease then ends it.
    pub async fn close(&self) {
        self.inner.close().await;
    }
}

impl<B: Backend> Drop for Relay<B> {
    fn drop(&mut self) {
        if self.inner.closing.is_cancelled() {
            return;
        }
        let inner = Arc::clone(&self.inner);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { inner.close().await });
        } else {
            inner.closing.cancel();
        }
    }
}

impl<B: Backend> Inner<B> {
    fn assert_open(&self) -> Result<()> {
        if self.closing.is_cancelled() {
            return Err(Error::Closed("relay"));
        }
        Ok(())
    }

    fn emit_error(&self, err: Error) {
        let _ = self.events.send(RelayEvent::Error(Arc::new(err)));
    }

    async fn register(&self) -> Result<()> {
        self.store
            .relay_register_node(
                &self.o.node_id,
                self.o.lease,
                &self.info,
                self.o.inbox_max_length,
            )
            .await
    }

    async fn remove_endpoint(&self, endpoint: &RelayId) -> Result<()> {
        if self.closing.is_cancelled() {
            return Ok(());
        }
        self.store
            .relay_remove_endpoint(&self.o.node_id, endpoint)
            .await?;
        let mut endpoints = lock(&self.endpoints);
        if endpoints
            .get(endpoint.as_str())
            .is_some_and(|e| !e.active.load(Ordering::SeqCst))
        {
            endpoints.remove(endpoint.as_str());
        }
        Ok(())
    }

    async fn close(&self) {
        let mut closed = self.closed.lock().await;
        if *closed {
            return;
        }
        *closed = true;
        self.closing.cancel();
        lock(&self.endpoints).clear();
        self.store.relay_interrupt_inbox().await;
        let tasks = std::mem::take(&mut *lock(&self.tasks));
        for task in tasks {
            let _ = task.await;
        }
        if let Err(e) = self.store.relay_unregister_node(&self.o.node_id).await {
            self.emit_error(e);
        }
        if let Err(e) = self.store.relay_close().await {
            self.emit_error(e);
        }
    }
}
