//! [`RelayOptions`]: upstream's `RelayOptions`, with its defaults and its checks.

use std::time::Duration;

use super::RelayId;
use crate::options::ValidationError;

/// The largest value upstream takes for a duration or length option (`2^31 - 1`).
const MAX_OPTION: u64 = 2_147_483_647;

/// The longest node name.
pub const MAX_NAME_LENGTH: usize = 256;

/// How a [`Relay`](super::Relay) runs; `Default` is upstream's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayOptions {
    /// Isolates relays sharing a store; `default` by default.
    pub namespace: String,
    /// This node's id; random (32 hex digits) by default.
    pub node_id: Option<String>,
    /// A human-readable name shown by dashboards (at most 256 characters).
    pub name: Option<String>,
    /// How long the node stays registered without a heartbeat; 30 s by default. After it,
    /// any node may sweep it with its subscriptions.
    pub lease_duration: Duration,
    /// How often the lease is renewed; a third of the lease (at least 1 ms) by default.
    pub heartbeat_interval: Option<Duration>,
    /// How often this node sweeps expired nodes; the lease by default.
    pub sweep_interval: Option<Duration>,
    /// The largest serialized message, in bytes; 512 KiB by default.
    pub max_message_size: u64,
    /// The most unread messages kept in this node's inbox (the oldest are dropped beyond);
    /// 10,000 by default.
    pub inbox_max_length: u64,
    /// The backlog at which [`RelayEvent::Lag`](super::RelayEvent::Lag) is sent; half the
    /// inbox maximum by default; at most `inbox_max_length`.
    pub lag_threshold: Option<u64>,
    /// The longest an inbox read waits for messages; 5 s by default.
    pub block_timeout: Duration,
}

impl Default for RelayOptions {
    fn default() -> Self {
        Self {
            namespace: "default".into(),
            node_id: None,
            name: None,
            lease_duration: Duration::from_secs(30),
            heartbeat_interval: None,
            sweep_interval: None,
            max_message_size: 512 * 1024,
            inbox_max_length: 10_000,
            lag_threshold: None,
            block_timeout: Duration::from_secs(5),
        }
    }
}

/// The options checked, with every default resolved.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub namespace: RelayId,
    pub node_id: RelayId,
    pub name: Option<String>,
    pub lease: Duration,
    pub heartbeat_interval: Duration,
    pub sweep_interval: Duration,
    pub max_message_size: u64,
    pub inbox_max_length: u64,
    pub lag_threshold: u64,
    pub block_timeout: Duration,
}

fn check_span(field: &str, value: u64) -> Result<(), ValidationError> {
    if value == 0 || value > MAX_OPTION {
        return Err(ValidationError::single(
            "relay options",
            field,
            format!("must be between 1 and {MAX_OPTION} (got {value})"),
        ));
    }
    Ok(())
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl RelayOptions {
    /// Options with upstream's defaults.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Sets the node id.
    #[must_use]
    pub fn node_id(mut self, id: impl Into<String>) -> Self {
        self.node_id = Some(id.into());
        self
    }

    /// Sets the node's name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the lease.
    #[must_use]
    pub fn lease_duration(mut self, lease: Duration) -> Self {
        self.lease_duration = lease;
        self
    }

    /// Sets the heartbeat interval.
    #[must_use]
    pub fn heartbeat_interval(mut self, every: Duration) -> Self {
        self.heartbeat_interval = Some(every);
        self
    }

    /// Sets the sweep interval.
    #[must_use]
    pub fn sweep_interval(mut self, every: Duration) -> Self {
        self.sweep_interval = Some(every);
        self
    }

    /// Sets the largest message.
    #[must_use]
    pub fn max_message_size(mut self, bytes: u64) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Sets the inbox's maximum length.
    #[must_use]
    pub fn inbox_max_length(mut self, length: u64) -> Self {
        self.inbox_max_length = length;
        self
    }

    /// Sets the lag threshold.
    #[must_use]
    pub fn lag_threshold(mut self, backlog: u64) -> Self {
        self.lag_threshold = Some(backlog);
        self
    }

    /// Sets the longest inbox wait.
    #[must_use]
    pub fn block_timeout(mut self, timeout: Duration) -> Self {
        self.block_timeout = timeout;
        self
    }

    /// Checks every option as upstream's constructor does and resolves the defaults.
    pub(crate) fn resolve(&self) -> Result<Resolved, ValidationError> {
        let namespace = RelayId::new("namespace", self.namespace.clone())?;
        let node_id = match &self.node_id {
            Some(id) => RelayId::new("node_id", id.clone())?,
            None => RelayId::random(),
        };
        if let Some(name) = &self.name
            && name.chars().count() > MAX_NAME_LENGTH
        {
            return Err(ValidationError::single(
                "relay options",
                "name",
                format!("must be at most {MAX_NAME_LENGTH} characters"),
            ));
        }
        let lease = ms(self.lease_duration);
        check_span("lease_duration", lease)?;
        let heartbeat = self.heartbeat_interval.map_or((lease / 3).max(1), ms);
        check_span("heartbeat_interval", heartbeat)?;
        let sweep = self.sweep_interval.map_or(lease, ms);
        check_span("sweep_interval", sweep)?;
        check_span("block_timeout", ms(self.block_timeout))?;
        check_span("inbox_max_length", self.inbox_max_length)?;
        check_span("max_message_size", self.max_message_size)?;
        let lag = self
            .lag_threshold
            .unwrap_or((self.inbox_max_length / 2).max(1));
        check_span("lag_threshold", lag)?;
        if lag > self.inbox_max_length {
            return Err(ValidationError::single(
                "relay options",
                "lag_threshold",
                format!(
                    "must not exceed inbox_max_length ({lag} > {})",
                    self.inbox_max_length
                ),
            ));
        }
        Ok(Resolved {
            namespace,
            node_id,
            name: self.name.clone(),
            lease: Duration::from_millis(lease),
            heartbeat_interval: Duration::from_millis(heartbeat),
            sweep_interval: Duration::from_millis(sweep),
            max_message_size: self.max_message_size,
            inbox_max_length: self.inbox_max_length,
            lag_threshold: lag,
            block_timeout: self.block_timeout,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_upstreams() {
        let r = RelayOptions::new().resolve().unwrap();
        assert_eq!(r.namespace.as_str(), "default");
        assert_eq!(r.node_id.as_str().len(), 32);
        assert_eq!(r.lease, Duration::from_secs(30));
        assert_eq!(r.heartbeat_interval, Duration::from_secs(10));
        assert_eq!(r.sweep_interval, Duration::from_secs(30));
        assert_eq!(r.lag_threshold, 5000);
        assert_eq!(r.max_message_size, 524_288);
    }

    #[test]
    fn bad_options_name_their_field() {
        let field = |o: RelayOptions| o.resolve().unwrap_err().problems()[0].path.clone();
        assert_eq!(field(RelayOptions::new().namespace("a b")), "namespace");
        assert_eq!(field(RelayOptions::new().node_id("")), "node_id");
        assert_eq!(field(RelayOptions::new().name("n".repeat(257))), "name");
        assert_eq!(
            field(RelayOptions::new().lease_duration(Duration::ZERO)),
            "lease_duration"
        );
        assert_eq!(
            field(RelayOptions::new().inbox_max_length(10).lag_threshold(11)),
            "lag_threshold"
        );
        assert_eq!(
            field(RelayOptions::new().max_message_size(0)),
            "max_message_size"
        );
    }
}
