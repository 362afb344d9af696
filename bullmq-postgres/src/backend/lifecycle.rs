//! `Lifecycle` for PostgreSQL: readiness, closing, client names and keys, and [`ConnState`],
//! what the clones of one backend share (closing flag, interrupts, the `LISTEN` connection,
//! the polling settings and the event reader's horizon).
//!
//! # Client names
//!
//! As upstream, only the dedicated `LISTEN` connection is named (its `application_name`), which
//! is what `get_client_list.sql` reads: a worker's is the queue name (`<queue>:w:<name>` when
//! named), a `QueueEvents`' is `<queue>:qe` (see [`crate::connection::client_name`]). Naming opens the
//! connection at once, so that discovery sees the role as soon as it is set.
//!
//! # Closing
//!
//! `close` and `disconnect` end the waits in flight and close the `LISTEN` connection. The
//! pool is left open: it is shared with [`PostgresBackend::sibling`]s and clones (upstream's
//! `forQueue` siblings do not own the connection either):
//! [`PostgresConnection::close`](crate::PostgresConnection::close) closes it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bullmq_core::backend::{BlockTimeouts, ClientRole, Lifecycle, NodeKey};
use bullmq_core::clock::Clock;
use bullmq_core::{Error, Prefix, QueueName, Result};
use tokio::sync::watch;

use super::PostgresBackend;
use super::events::Horizon;
use super::watch::Interrupts;
use crate::connection::client_name;
use crate::connection::listener::{Channel, Listener};
use crate::options::{DEFAULT_EVENT_HOLD_MAX, DEFAULT_POLL_INTERVAL};

/// What clones of one backend share.
pub(crate) struct ConnState {
    /// Set once `close` has begun.
    pub(crate) closing: AtomicBool,
    /// Set by `disconnect_blocking`, cleared by `reconnect_blocking` or by the one wait it
    /// refuses (upstream's `blockingDisconnected`).
    pub(crate) blocking_disconnected: AtomicBool,
    /// Ends the waits in flight.
    pub(crate) interrupts: watch::Sender<Interrupts>,
    /// The dedicated `LISTEN` connection.
    pub(crate) listener: Listener,
    /// Whether waits poll instead of listening (for PgBouncer's transaction pooling, where a
    /// `LISTEN` connection hears nothing).
    force_polling: AtomicBool,
    /// The polling interval in ms; 0 for [`DEFAULT_POLL_INTERVAL`].
    poll_interval_ms: AtomicU64,
    /// [`DEFAULT_EVENT_HOLD_MAX`] unless set, in ms; 0 for the default.
    event_hold_max_ms: AtomicU64,
    /// The event reader's horizon: ids up to it are final.
    pub(crate) events: Horizon,
}

impl Default for ConnState {
    fn default() -> Self {
        Self {
            closing: AtomicBool::new(false),
            blocking_disconnected: AtomicBool::new(false),
            interrupts: watch::channel(Interrupts::default()).0,
            listener: Listener::default(),
            force_polling: AtomicBool::new(false),
            poll_interval_ms: AtomicU64::new(0),
            event_hold_max_ms: AtomicU64::new(0),
            events: Horizon::default(),
        }
    }
}

impl std::fmt::Debug for ConnState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnState")
            .field("closing", &self.closing)
            .field("blocking_disconnected", &self.blocking_disconnected)
            .field("force_polling", &self.force_polling)
            .field("poll_interval", &self.poll_interval())
            .finish_non_exhaustive()
    }
}

impl ConnState {
    /// The state of a new backend that waits as `waiting` says.
    pub(crate) fn waiting(waiting: crate::connection::Waiting) -> Self {
        let state = Self::default();
        state.set_polling(!waiting.listen, Some(waiting.poll_interval));
        state.set_event_hold_max(waiting.event_hold_max);
        state
    }

    /// A fresh state with this one's waiting settings (polling, event hold) and nothing
    /// else: no `LISTEN` connection, not closing (for [`Lifecycle::handle`]).
    pub(crate) fn settings_only(&self) -> Self {
        let state = Self::default();
        state.set_polling(
            self.forced_polling(),
            match self.poll_interval_ms.load(Ordering::SeqCst) {
                0 => None,
                ms => Some(Duration::from_millis(ms)),
            },
        );
        if self.event_hold_max_ms.load(Ordering::SeqCst) != 0 {
            state.set_event_hold_max(self.event_hold_max());
        }
        state
    }

    /// True once `close` has begun.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Whether waits poll instead of listening.
    pub(crate) fn forced_polling(&self) -> bool {
        self.force_polling.load(Ordering::SeqCst)
    }

    /// How often a wait without notifications checks for work.
    pub(crate) fn poll_interval(&self) -> Duration {
        match self.poll_interval_ms.load(Ordering::SeqCst) {
            0 => DEFAULT_POLL_INTERVAL,
            ms => Duration::from_millis(ms),
        }
    }

    /// How long events may be held back behind one writing transaction.
    pub(crate) fn event_hold_max(&self) -> Duration {
        match self.event_hold_max_ms.load(Ordering::SeqCst) {
            0 => DEFAULT_EVENT_HOLD_MAX,
            ms => Duration::from_millis(ms),
        }
    }

    /// Polls every `interval` (at least 1 ms; `None` for the default) when notifications
    /// cannot be had; with `forced`, always, and no `LISTEN` connection is opened.
    pub(crate) fn set_polling(&self, forced: bool, interval: Option<Duration>) {
        let ms = interval.map_or(0, |i| {
            u64::try_from(i.as_millis()).unwrap_or(u64::MAX).max(1)
        });
        self.poll_interval_ms.store(ms, Ordering::SeqCst);
        self.force_polling.store(forced, Ordering::SeqCst);
    }

    /// Sets how long events may be held back behind one writing transaction (at least 1 ms).
    pub(crate) fn set_event_hold_max(&self, max: Duration) {
        let ms = u64::try_from(max.as_millis()).unwrap_or(u64::MAX).max(1);
        self.event_hold_max_ms.store(ms, Ordering::SeqCst);
    }

    /// Ends the waits in flight: the worker's only, or all of them.
    pub(crate) fn interrupt(&self, all: bool) {
        self.interrupts.send_modify(|i| {
            i.blocking = i.blocking.wrapping_add(1);
            if all {
                i.all = i.all.wrapping_add(1);
            }
        });
    }
}

/// Takes `<queue>:<id>` apart as upstream does, at the last `:`; the prefix is always empty.
/// Keys without a `:`, or with an empty queue or id, are not node keys.
fn parse_node_key(key: &str) -> Option<NodeKey> {
    let (queue, id) = key.rsplit_once(':')?;
    if queue.is_empty() || id.is_empty() {
        return None;
    }
    Some(NodeKey {
        prefix: String::new(),
        queue: queue.to_owned(),
        id: id.to_owned(),
    })
}

impl Lifecycle for PostgresBackend {
    /// A round trip on the pool.
    async fn wait_until_ready(&self) -> Result<()> {
        if self.state.is_closing() {
            return Err(Error::Closed("postgres backend"));
        }
        self.execute(sqlx::query("SELECT 1"), "check the connection")
            .await?;
        Ok(())
    }

    /// Marks the backend closing, ends the waits in flight and closes the `LISTEN`
    /// connection. `force` changes nothing: there is nothing buffered to flush.
    async fn close(&self, _force: bool) -> Result<()> {
        self.state.closing.store(true, Ordering::SeqCst);
        self.state.interrupt(true);
        self.state.listener.stop().await;
        Ok(())
    }

    /// Ends the waits in flight and closes the `LISTEN` connection; unlike
    /// [`close`](Self::close) the backend stays usable and reopens it on the next wait.
    async fn disconnect(&self) -> Result<()> {
        self.state.interrupt(true);
        self.state.listener.stop().await;
        Ok(())
    }

    /// Names the `LISTEN` connection after a worker's or `QueueEvents`' role and opens it
    /// now (listening on the role's channel), so that discovery lists it at once. A queue
    /// names nothing, as upstream. With polling forced there is no such connection: the name
    /// is only remembered.
    async fn set_client_role(&self, role: ClientRole) -> Result<()> {
        let channel = match role {
            ClientRole::Queue => return Ok(()),
            ClientRole::Worker { .. } => Channel::Jobs,
            ClientRole::QueueEvents => Channel::Events,
        };
        if self.state.is_closing() {
            return Err(Error::Closed("postgres backend"));
        }
        let name = self.client_name(&role);
        if self.state.forced_polling() {
            self.state.listener.set_name(name);
            return Ok(());
        }
        self.state
            .listener
            .open_named(self.pool(), self.queue_name(), name, channel)
            .await
    }

    fn is_closing(&self) -> bool {
        self.state.is_closing()
    }

    fn handle(&self) -> Self {
        Self {
            state: std::sync::Arc::new(self.state.settings_only()),
            ..self.clone()
        }
    }

    /// A backend for `queue` in the same schema; the prefix is a Redis key space and has no
    /// meaning here, as upstream ignores it.
    fn for_queue(&self, queue: &QueueName, _prefix: Option<&Prefix>) -> Self {
        self.sibling(queue.clone())
    }

    /// The queue name: the schema is the namespace, there is no prefix.
    fn qualified_name(&self) -> &str {
        self.queue_name()
    }

    fn bound_queue(&self) -> Option<&QueueName> {
        Some(self.queue())
    }

    /// `<queue>:<part>`.
    fn to_key(&self, part: &str) -> String {
        format!("{}:{part}", self.queue_name())
    }

    fn parse_node_key(&self, key: &str) -> Option<NodeKey> {
        parse_node_key(key)
    }

    /// The queue name, `<queue>:w:<name>` for a named worker, `<queue>:qe` for `QueueEvents`.
    fn client_name(&self, role: &ClientRole) -> String {
        let queue = self.queue_name();
        match role {
            ClientRole::Queue => queue.to_owned(),
            ClientRole::Worker { name } => client_name::worker(queue, name.as_deref()),
            ClientRole::QueueEvents => client_name::queue_events(queue),
        }
    }

    /// Upstream's 1 ms to 10 s. `LISTEN` has no granularity of its own, so upstream mirrors
    /// Redis' 1 ms; it allows 3600 s when TCP keepalive is on for its `LISTEN` connection, 10 s
    /// otherwise, and sqlx does not enable keepalive.
    fn block_timeouts(&self) -> BlockTimeouts {
        BlockTimeouts::UPSTREAM
    }

    fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::parse_node_key;

    #[test]
    fn node_keys_split_on_the_last_colon() {
        let k = parse_node_key("mail:42").expect("a node key");
        assert_eq!(
            (k.prefix.as_str(), k.queue.as_str(), k.id.as_str()),
            ("", "mail", "42")
        );
        let k = parse_node_key("a:b:c").expect("a node key");
        assert_eq!((k.queue.as_str(), k.id.as_str()), ("a:b", "c"));
        assert_eq!(parse_node_key("plain"), None);
        assert_eq!(parse_node_key(":7"), None);
        assert_eq!(parse_node_key("q:"), None);
    }
}
