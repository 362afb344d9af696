//! The order a store held an options object's keys in.
//!
//! JavaScript objects keep their keys in insertion order, and Node.js BullMQ passes a job's
//! options on in the order it read them: a worker advancing a job scheduler packs the job's
//! own options, in their stored order, for the Lua script that stores the next iteration, and
//! the order of what that script stores follows the order it was given. Options read from a
//! store therefore remember their order, so that what Rust writes back from them is what
//! Node.js would have written.

use std::borrow::Cow;

/// Key names in order, each with the order of its own object's keys when its value is one of
/// the typed nested options (`repeat`, `backoff`, `removeOnComplete`, …).
///
/// Names are the long ones Node.js uses in memory (`keepLogs`, not `kl`; `telemetry` for
/// `tm`/`omc`). Options read from a store hold the store's order; options built with setters
/// the order the setters were called in. Keys not listed (set without a setter) are written
/// after the listed ones, in the fixed order Rust writes options; empty means that order
/// throughout.
///
/// The order is how the options are written, not what they mean: two options that differ only
/// in it compare equal.
#[derive(Debug, Clone, Default)]
pub struct KeyOrder(Vec<(Cow<'static, str>, KeyOrder)>);

/// The names options and their typed nested objects use: recorded without allocating, as
/// every job read records its options' order.
const KNOWN: [&str; 45] = [
    "attempts",
    "jobId",
    "timestamp",
    "priority",
    "delay",
    "backoff",
    "lifo",
    "removeOnComplete",
    "removeOnFail",
    "keepLogs",
    "stackTraceLimit",
    "sizeLimit",
    "parent",
    "failParentOnFailure",
    "continueParentOnFailure",
    "ignoreDependencyOnFailure",
    "removeDependencyOnFailure",
    "deduplication",
    "telemetry",
    "repeat",
    "prevMillis",
    "repeatJobKey",
    "type",
    "jitter",
    "age",
    "count",
    "limit",
    "id",
    "queue",
    "ttl",
    "extend",
    "replace",
    "reschedule",
    "keepLastIfActive",
    "metadata",
    "omitContext",
    "pattern",
    "every",
    "tz",
    "key",
    "immediately",
    "offset",
    "startDate",
    "endDate",
    "utc",
];

fn name(key: &str) -> Cow<'static, str> {
    KNOWN
        .iter()
        .find(|k| **k == key)
        .map_or_else(|| Cow::Owned(key.to_owned()), |k| Cow::Borrowed(*k))
}

impl PartialEq for KeyOrder {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl KeyOrder {
    /// True when no order is known.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The key names, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_ref())
    }

    /// The order of `key`'s own object, if recorded.
    #[must_use]
    pub fn child(&self, key: &str) -> Option<&KeyOrder> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, c)| c)
    }

    /// Where `key` comes, if listed.
    #[must_use]
    pub fn position(&self, key: &str) -> Option<usize> {
        self.0.iter().position(|(k, _)| k == key)
    }

    /// Appends `key` unless it is listed already (a JavaScript assignment to an existing key
    /// keeps its place).
    pub fn push(&mut self, key: &str, child: KeyOrder) {
        if self.position(key).is_none() {
            self.0.push((name(key), child));
        }
    }

    /// Removes `key`, if listed.
    pub fn remove(&mut self, key: &str) {
        self.0.retain(|(k, _)| k != key);
    }

    /// Replaces the order of `key`'s own object (appending `key` when it is not listed).
    pub fn set_child(&mut self, key: &str, child: KeyOrder) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, c)) => *c = child,
            None => self.0.push((name(key), child)),
        }
    }

    /// Moves `key` to the front, if listed: Node's `Job` constructor builds its options as
    /// `{attempts: 0, ...opts}`, so `attempts` comes first whatever the caller's order.
    pub(crate) fn move_to_front(&mut self, key: &str) {
        if let Some(at) = self.position(key) {
            let entry = self.0.remove(at);
            self.0.insert(0, entry);
        }
    }

    /// The order of JavaScript's `{...defaults, ...own}`: the keys of `defaults` in their
    /// place, then those only `own` has; a key both have takes its nested order from `own`,
    /// as its value comes from there.
    #[must_use]
    pub(crate) fn spread(defaults: &KeyOrder, own: &KeyOrder) -> KeyOrder {
        let mut out = KeyOrder::default();
        for (key, child) in defaults.0.iter().chain(&own.0) {
            let child = own.child(key).unwrap_or(child);
            out.push(key, child.clone());
        }
        out
    }

    /// This order followed by the keys of `all` it does not list (in `all`'s order): what
    /// the writer does with keys set without a setter.
    #[must_use]
    pub(crate) fn completed_by(&self, all: &KeyOrder) -> KeyOrder {
        let mut out = self.clone();
        for (key, child) in &all.0 {
            out.push(key, child.clone());
        }
        out
    }

    /// The keys of a JSON object in their order, without nested orders.
    pub(crate) fn of_object(value: &serde_json::Value) -> KeyOrder {
        match value {
            serde_json::Value::Object(map) => {
                KeyOrder(map.keys().map(|k| (name(k), KeyOrder::default())).collect())
            }
            _ => KeyOrder::default(),
        }
    }
}

impl<S: AsRef<str>> FromIterator<S> for KeyOrder {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut order = KeyOrder::default();
        for key in iter {
            order.push(key.as_ref(), KeyOrder::default());
        }
        order
    }
}
