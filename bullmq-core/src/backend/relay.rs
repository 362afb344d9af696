//! The relay's store operations (upstream's `IRelayBackend`, experimental in Node.js BullMQ
//! 6.7): one Lua script on Redis, one SQL function on PostgreSQL each, so the routing (topic
//! grammar, matching, subscriptions, leases, inboxes) is the store's and shared verbatim by
//! every runtime. [`Relay`](crate::relay::Relay) only runs timers, reads its inbox and calls
//! handlers.

use std::future::Future;
use std::time::Duration;

use crate::Result;
use crate::options::ValidationError;
use crate::relay::{
    RelayCounts, RelayId, RelayInboxBatch, RelayNodeConnection, RelayNodeInfo, RelayNodeState,
    RelayPatternState, RelayPublishArgs, RelayPublished, RelayRetainedState, RelaySubscribed,
    RelaySubscriptionFilter, RelaySubscriptionState,
};

/// A node's `info` as the JSON text both stores keep for it, or the validation error that
/// refuses to register it.
///
/// # Errors
///
/// [`Error::Invalid`](crate::Error::Invalid) when `info` does not serialize.
#[doc(hidden)]
pub fn node_info_json(info: &RelayNodeInfo) -> Result<String> {
    crate::json::to_string(info).map_err(|e| {
        ValidationError::single("relay node", "info", format!("does not serialize: {e}")).into()
    })
}

/// The relay (upstream: `IRelayBackend`). Every method but
/// [`relay_handle`](Self::relay_handle) works on a handle from it, bound to one namespace; on
/// another backend they fail with a validation error.
///
/// Ranges (`start`, `end`) are inclusive positions from 0, `end` -1 meaning "to the end", as
/// for the queue getters.
pub trait RelayStore: Send + Sync + Sized {
    /// A handle on the same store for `namespace`: its keys or rows, and an inbox connection
    /// of its own, named after `node` so that
    /// [`relay_node_connections`](Self::relay_node_connections) finds it.
    fn relay_handle(&self, namespace: &RelayId, node: Option<&RelayId>) -> Self;

    /// Where a freshly registered node starts reading its inbox.
    fn relay_initial_cursor(&self) -> &'static str;

    /// Registers (or refreshes) a node, its lease and its info.
    fn relay_register_node(
        &self,
        node: &RelayId,
        lease: Duration,
        info: &RelayNodeInfo,
        inbox_max_length: u64,
    ) -> impl Future<Output = Result<()>> + Send;

    /// Renews a node's lease; false when it is not registered or its lease ended (then the
    /// caller registers again and restores its subscriptions).
    fn relay_heartbeat(
        &self,
        node: &RelayId,
        lease: Duration,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Removes a node with its subscriptions and inbox; false when it was not registered.
    fn relay_unregister_node(&self, node: &RelayId) -> impl Future<Output = Result<bool>> + Send;

    /// Removes up to `limit` nodes whose lease ended, with their subscriptions and inboxes,
    /// and expired retained messages; returns the removed nodes' ids.
    fn relay_sweep(&self, limit: u32) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// Subscribes a node's endpoint to a pattern; for an exact topic, with its retained
    /// message read atomically with the subscription.
    fn relay_subscribe(
        &self,
        node: &RelayId,
        endpoint: &RelayId,
        pattern: &str,
    ) -> impl Future<Output = Result<RelaySubscribed>> + Send;

    /// Removes an endpoint's subscriptions; returns how many.
    fn relay_remove_endpoint(
        &self,
        node: &RelayId,
        endpoint: &RelayId,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// Publishes `data` (serialized) on `topic`.
    fn relay_publish(
        &self,
        topic: &str,
        data: &str,
        args: RelayPublishArgs,
    ) -> impl Future<Output = Result<RelayPublished>> + Send;

    /// Deletes a topic's retained message; false when there was none.
    fn relay_delete_retained(&self, topic: &str) -> impl Future<Output = Result<bool>> + Send;

    /// The next entries of a node's inbox after `cursor`, waiting up to `block` when there are
    /// none (zero: not at all). Empty, with the same cursor, when interrupted.
    fn relay_read_inbox(
        &self,
        node: &RelayId,
        cursor: &str,
        block: Duration,
        count: u32,
    ) -> impl Future<Output = Result<RelayInboxBatch>> + Send;

    /// Makes a blocked [`relay_read_inbox`](Self::relay_read_inbox) return at once, and later
    /// reads return empty without waiting: used on close.
    fn relay_interrupt_inbox(&self) -> impl Future<Output = ()> + Send;

    /// Removes the entries consumed up to `cursor` and the oldest beyond `max_length`;
    /// returns how many are left unread (the node's backlog).
    fn relay_trim_inbox(
        &self,
        node: &RelayId,
        cursor: &str,
        max_length: u64,
    ) -> impl Future<Output = Result<u64>> + Send;

    /// The namespace's totals.
    fn relay_counts(&self) -> impl Future<Output = Result<RelayCounts>> + Send;

    /// Nodes, by registration.
    fn relay_nodes(
        &self,
        start: i64,
        end: i64,
    ) -> impl Future<Output = Result<Vec<RelayNodeState>>> + Send;

    /// Subscriptions, all or one node's or one pattern's.
    fn relay_subscriptions(
        &self,
        filter: Option<&RelaySubscriptionFilter>,
        start: i64,
        end: i64,
    ) -> impl Future<Output = Result<Vec<RelaySubscriptionState>>> + Send;

    /// Subscribed patterns, by value.
    fn relay_patterns(
        &self,
        start: i64,
        end: i64,
    ) -> impl Future<Output = Result<Vec<RelayPatternState>>> + Send;

    /// Retained messages, by expiry.
    fn relay_retained(
        &self,
        start: i64,
        end: i64,
    ) -> impl Future<Output = Result<Vec<RelayRetainedState>>> + Send;

    /// Namespaces of the store (of the Redis prefix, of the PostgreSQL schema) in use.
    fn relay_namespaces(&self) -> impl Future<Output = Result<Vec<String>>> + Send;

    /// A node's inbox connection(s), as the store sees them; lists every client of the store.
    fn relay_node_connections(
        &self,
        node: &RelayId,
    ) -> impl Future<Output = Result<Vec<RelayNodeConnection>>> + Send;

    /// Closes the handle's own connections (the inbox connection).
    fn relay_close(&self) -> impl Future<Output = Result<()>> + Send;
}
