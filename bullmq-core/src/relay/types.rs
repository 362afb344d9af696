//! What the relay's store operations take and give back: upstream's `IRelayBackend` shapes
//! (`interfaces/relay-backend.d.ts`), one Rust type each.

use serde::{Deserialize, Serialize};

use super::topic::id_fault;
use crate::options::ValidationError;

/// A namespace, node or endpoint id: 1 to 64 of `A-Z a-z 0-9 _ -`, as upstream's
/// `isValidRelayId` and the `Relay` constructor check it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelayId(String);

impl RelayId {
    /// Checks `id`; `what` (`namespace`, `node_id`, …) names the field in the error.
    ///
    /// # Errors
    ///
    /// A [`ValidationError`] naming the field and the fault.
    pub fn new(what: &str, id: impl Into<String>) -> Result<Self, ValidationError> {
        let id = id.into();
        match id_fault(&id) {
            None => Ok(Self(id)),
            Some(problem) => Err(ValidationError::single("relay id", what, problem)),
        }
    }

    /// A random id: 32 hex digits, as upstream's `randomUUID()` without its dashes.
    #[must_use]
    pub fn random() -> Self {
        let hi = fastrand::u64(..);
        let lo = fastrand::u64(..);
        Self(format!("{hi:016x}{lo:016x}"))
    }

    /// The id.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RelayId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One inbox entry (upstream's `RelayInboxEntry`): a message and the endpoints of the reading
/// node it is for. The store routes; the runtime never matches topics itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayInboxEntry {
    /// The entry's kind: only `msg` exists; readers skip kinds they do not know.
    pub kind: String,
    /// The topic it was published on.
    pub topic: String,
    /// The message id, unique and increasing per namespace.
    pub mid: String,
    /// The publish time (Unix ms), as the publisher gave it.
    pub ts: u64,
    /// The payload, JSON as the publisher wrote it.
    pub data: String,
    /// The endpoints of this node it is for.
    pub endpoints: Vec<String>,
}

/// A batch read from an inbox, and where the next read starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RelayInboxBatch {
    /// The entries, oldest first.
    pub entries: Vec<RelayInboxEntry>,
    /// The position to read from next (opaque); entries count as consumed once the next read
    /// or trim is made with it.
    pub cursor: String,
}

/// A topic's retained message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayRetainedMessage {
    /// Its message id.
    pub mid: String,
    /// Its publish time (Unix ms).
    pub ts: u64,
    /// Its payload, as serialized.
    pub data: String,
}

/// What subscribing did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelaySubscribed {
    /// False when the endpoint was already subscribed to the pattern.
    pub added: bool,
    /// The exact topic's retained message, read atomically with the subscription; never set
    /// for a pattern with wildcards.
    pub retained: Option<RelayRetainedMessage>,
}

/// How to publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayPublishArgs {
    /// The publish time (Unix ms).
    pub ts: u64,
    /// Keep the message as the topic's retained value for this long (ms); 0: not at all.
    pub retain_ms: u64,
    /// The largest payload taken, in bytes.
    pub max_size: u64,
}

/// What a publish reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayPublished {
    /// The message id.
    pub mid: String,
    /// Live nodes it was delivered to.
    pub nodes: u64,
    /// Endpoints it was delivered to.
    pub endpoints: u64,
}

/// What describes a node on dashboards (upstream's `RelayNodeInfo`, stored as JSON in its key
/// order: `name`, `host`, `pid`, `version`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RelayNodeInfo {
    /// A human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The host it runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    /// The BullMQ version of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A node as the store lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelayNodeState {
    /// Its id.
    pub id: String,
    /// What it registered with.
    pub info: RelayNodeInfo,
    /// When it registered (Unix ms).
    pub registered_at: u64,
    /// When its lease ends (Unix ms); an ended lease is swept by the next sweep.
    pub lease_until: u64,
    /// Its last heartbeat (Unix ms); none once the lease ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat: Option<u64>,
    /// Unread messages in its inbox, as of its last trim.
    pub backlog: u64,
    /// Unread messages dropped because its inbox was full.
    pub dropped: u64,
    /// Its subscriptions.
    pub subscriptions: u64,
}

/// One subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelaySubscriptionState {
    /// The subscribing node.
    pub node_id: String,
    /// Its endpoint.
    pub endpoint_id: String,
    /// The pattern.
    pub pattern: String,
}

/// Restricts a subscription listing to one node or one pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelaySubscriptionFilter {
    /// The subscriptions of this node.
    Node(String),
    /// The subscriptions to this pattern.
    Pattern(String),
}

/// A subscribed pattern and how many subscriptions it has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayPatternState {
    /// The pattern.
    pub pattern: String,
    /// Its subscriptions.
    pub subscriptions: u64,
}

/// A retained message and its topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelayRetainedState {
    /// The topic.
    pub topic: String,
    /// When it expires (Unix ms).
    pub expires_at: u64,
    /// Its message id.
    pub mid: String,
    /// Its publish time (Unix ms).
    pub ts: u64,
    /// Its payload, as serialized.
    pub data: String,
}

/// A node's inbox connection as the store sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayNodeConnection {
    /// The client address (`ip:port`, or `local`).
    pub address: String,
    /// Seconds since it was opened.
    pub age: u64,
    /// Seconds since its last command.
    pub idle: u64,
}

/// A namespace's totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RelayCounts {
    /// Registered nodes, expired ones not swept yet included.
    pub nodes: u64,
    /// Subscriptions.
    pub subscriptions: u64,
    /// Distinct patterns with a subscription.
    pub patterns: u64,
    /// Retained messages.
    pub retained: u64,
}

/// The codes upstream's relay scripts and SQL functions answer with (`RelayErrorCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayErrorCode {
    /// -1: the topic breaks the grammar.
    InvalidTopic,
    /// -2: the pattern breaks the grammar.
    InvalidPattern,
    /// -3: the node is not registered (its lease ended, or it was swept).
    NodeNotRegistered,
    /// -4: the payload is over the maximum message size.
    DataTooLarge,
    /// -5: a node or endpoint id breaks the grammar.
    InvalidId,
    /// -6: nodes of another data layout version use the namespace.
    IncompatibleLayout,
    /// A code this version does not know.
    Other(i64),
}

impl RelayErrorCode {
    /// The code for a store's answer.
    #[must_use]
    pub fn of(code: i64) -> Self {
        match code {
            -1 => Self::InvalidTopic,
            -2 => Self::InvalidPattern,
            -3 => Self::NodeNotRegistered,
            -4 => Self::DataTooLarge,
            -5 => Self::InvalidId,
            -6 => Self::IncompatibleLayout,
            other => Self::Other(other),
        }
    }
}

/// A relay operation the store refused, with upstream's message (`RelayError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {detail}", message(*code))]
pub struct RelayError {
    /// What was refused.
    pub code: RelayErrorCode,
    /// The value refused (topic, pattern or id).
    pub detail: String,
}

fn message(code: RelayErrorCode) -> String {
    match code {
        RelayErrorCode::InvalidTopic => "Invalid topic".into(),
        RelayErrorCode::InvalidPattern => "Invalid topic pattern".into(),
        RelayErrorCode::NodeNotRegistered => "Relay node is not registered".into(),
        RelayErrorCode::DataTooLarge => "Message data is too large".into(),
        RelayErrorCode::InvalidId => "Invalid relay node or endpoint id".into(),
        RelayErrorCode::IncompatibleLayout => {
            "The relay namespace is in use by nodes with an incompatible BullMQ version".into()
        }
        RelayErrorCode::Other(code) => format!("Relay error {code}"),
    }
}

impl RelayError {
    /// The error for a store's negative answer `code` about `detail`.
    #[must_use]
    pub fn new(code: i64, detail: impl Into<String>) -> Self {
        Self {
            code: RelayErrorCode::of(code),
            detail: detail.into(),
        }
    }
}
