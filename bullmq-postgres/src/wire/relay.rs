//! The parameters of upstream's relay commands, as Node.js's PostgreSQL relay passes them:
//! the namespace first, counts and times saturated to the SQL types, pages clamped (a negative
//! index reads as `-1`, "to the end"), a cursor's acknowledged ids as a `bigint[]`.

use std::time::Duration;

use bullmq_core::relay::{RelayId, RelayPublishArgs, RelaySubscriptionFilter};

use super::{millis, queued, unbound};
use crate::connection::Query;
use crate::sql::{SqlCommand, commands};

/// `v` as the SQL integer `T`, or `max` when it does not fit.
fn int<T: TryFrom<u64> + Copy>(v: u64, max: T) -> T {
    T::try_from(v).unwrap_or(max)
}

/// A page's indexes as `integer`s: a negative one beyond `integer` reads as `-1`.
fn range(start: i64, end: i64) -> (i32, i32) {
    let clamp = |v: i64| i32::try_from(v).unwrap_or(if v < 0 { -1 } else { i32::MAX });
    (clamp(start), clamp(end))
}

/// The ids a cursor acknowledges.
pub(crate) fn acks(cursor: &str) -> Vec<i64> {
    cursor
        .split(',')
        .filter_map(|id| id.trim().parse().ok())
        .collect()
}

/// `command(namespace, node, ..)`; the caller binds the rest.
pub(crate) fn of_node<'q>(command: SqlCommand, ns: &'q str, node: &'q RelayId) -> Query<'q> {
    queued(command, ns).bind(node.as_str())
}

/// `command(namespace, start, end)`: the pages of nodes, patterns and retained messages.
pub(crate) fn page(command: SqlCommand, ns: &str, start: i64, end: i64) -> Query<'_> {
    let (start, end) = range(start, end);
    queued(command, ns).bind(start).bind(end)
}

/// `relay_read_inbox(namespace, node, acknowledged ids, count)`.
pub(crate) fn read_inbox<'q>(
    ns: &'q str,
    node: &'q RelayId,
    ack: &'q [i64],
    count: u32,
) -> Query<'q> {
    of_node(commands::RELAY_READ_INBOX, ns, node)
        .bind(ack)
        .bind(int(u64::from(count), i32::MAX))
}

/// `relay_register_node(namespace, node, lease ms, info JSON)`.
pub(crate) fn register_node<'q>(
    ns: &'q str,
    node: &'q RelayId,
    lease: Duration,
    info: String,
) -> Query<'q> {
    of_node(commands::RELAY_REGISTER_NODE, ns, node)
        .bind(millis(lease))
        .bind(info)
}

/// `relay_heartbeat(namespace, node, lease ms)`.
pub(crate) fn heartbeat<'q>(ns: &'q str, node: &'q RelayId, lease: Duration) -> Query<'q> {
    of_node(commands::RELAY_HEARTBEAT, ns, node).bind(millis(lease))
}

/// `relay_sweep(namespace, limit)`.
pub(crate) fn sweep(ns: &str, limit: u32) -> Query<'_> {
    queued(commands::RELAY_SWEEP, ns).bind(int(u64::from(limit), i32::MAX))
}

/// `relay_publish(namespace, topic, data, ts, retain ms, max size)`.
pub(crate) fn publish<'q>(
    ns: &'q str,
    topic: &'q str,
    data: &'q str,
    args: RelayPublishArgs,
) -> Query<'q> {
    queued(commands::RELAY_PUBLISH, ns)
        .bind(topic)
        .bind(data)
        .bind(int(args.ts, i64::MAX))
        .bind(int(args.retain_ms, i64::MAX))
        .bind(int(args.max_size, i32::MAX))
}

/// `relay_trim_inbox(namespace, node, acknowledged ids, max length)`.
pub(crate) fn trim_inbox<'q>(
    ns: &'q str,
    node: &'q RelayId,
    cursor: &str,
    max_length: u64,
) -> Query<'q> {
    of_node(commands::RELAY_TRIM_INBOX, ns, node)
        .bind(acks(cursor))
        .bind(int(max_length, i32::MAX))
}

/// `relay_get_subscriptions(namespace, node, pattern, start, end)`: the filter sends the node
/// or the pattern, the other `NULL`.
pub(crate) fn get_subscriptions<'q>(
    ns: &'q str,
    filter: Option<&'q RelaySubscriptionFilter>,
    start: i64,
    end: i64,
) -> Query<'q> {
    let (node, pattern) = match filter {
        Some(RelaySubscriptionFilter::Node(n)) => (Some(n.as_str()), None),
        Some(RelaySubscriptionFilter::Pattern(p)) => (None, Some(p.as_str())),
        None => (None, None),
    };
    let (start, end) = range(start, end);
    queued(commands::RELAY_GET_SUBSCRIPTIONS, ns)
        .bind(node)
        .bind(pattern)
        .bind(start)
        .bind(end)
}

/// `relay_get_node_connections(application name, database)`.
pub(crate) fn get_node_connections<'q>(name: &'q str, database: &'q str) -> Query<'q> {
    unbound(commands::RELAY_GET_NODE_CONNECTIONS)
        .bind(name)
        .bind(database)
}
