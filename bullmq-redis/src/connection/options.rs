//! [`RedisOptions`]: how to reach Redis (standalone, cluster or sentinels), with which key
//! prefix, timeouts and connections; and [`ReplicaWait`], its opt-in `WAIT` after writes.

use std::time::Duration;

use bullmq_core::options::ValidationError;
use bullmq_core::{Prefix, Result};

use super::tls::client_for;
use super::{ClusterUrl, NodeClients, SentinelUrl};
use crate::error::wrap;

/// How to reach Redis and which key prefix to use.
///
/// A Redis Cluster is reached through a `redis+cluster://` URL (`rediss+cluster://` for TLS)
/// that names some of its nodes; the queue's keys must then carry a hash tag (a prefix such as
/// `{bull}`, or a queue name such as `{mail}`), which building the backend checks.
///
/// `rediss://` URLs need the `tls` feature (rustls). The server's certificate is then checked
/// against the Mozilla roots bundled with the crate, and its host name against the URL; to trust
/// a private CA instead, pass its certificate with [`ca_certificate`](Self::ca_certificate).
///
/// ```
/// use bullmq_redis::RedisOptions;
///
/// let opts = RedisOptions::new("rediss://:secret@cache.internal:6380");
/// assert!(!format!("{opts:?}").contains("secret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS; for a cluster,
    /// `redis+cluster://[user:password@]host:port[,host:port…]` (any nodes of it; the
    /// primaries are found from them), or `rediss+cluster://`; behind Redis Sentinel,
    /// `redis+sentinel://[user:password@]host:port[,host:port…]/<master>[/db]` with the
    /// sentinels' addresses (default port 26379) and the data nodes' credentials, the
    /// sentinels' own in `?sentinel_username=…&sentinel_password=…`, or `rediss+sentinel://`.
    pub url: String,
    /// The key prefix; `bull` by default, like Node.js.
    pub prefix: Prefix,
    /// PEM certificate(s) of the CA that signed the server's certificate, for `rediss://`; when
    /// set, only these are trusted (not the bundled roots). Needs the `tls` feature.
    pub ca_certificate: Option<Vec<u8>>,
    /// How long a command may wait for its reply before it fails with a timeout (and its
    /// connection is replaced): a hung server makes calls fail rather than hang. 5 s by default.
    /// It bounds scripts too: a `clean` or `obliterate` of a huge queue that runs longer is
    /// reported as a timeout although Redis finishes it; raise it for such work.
    pub response_timeout: Duration,
    /// How many direct connections the backend (with its clones and siblings) may hold: a
    /// call that finds no other call in flight writes its request and reads its reply on one
    /// of them itself, the fastest path for a latency-bound caller. Calls in flight together
    /// share one pipelined connection, whose requests go out together. 1 by default; 0 sends
    /// every call through the pipelined connection.
    pub direct_connections: usize,
    /// Connects without reading `INFO` (upstream's `skipVersionCheck`): no version check, no
    /// eviction-policy warning, and the server's abilities assumed as Node.js assumes them.
    /// For servers where `INFO` is disabled or renamed. `false` by default.
    pub skip_version_check: bool,
    /// Has each add and each finishing call (`moveToFinished`: completed or failed) confirmed
    /// by replicas with `WAIT` before it returns, so that a failover cannot lose it once it
    /// returned. Off (`None`) by default; see [`wait_for_replicas`](Self::wait_for_replicas).
    pub wait_for_replicas: Option<ReplicaWait>,
}

/// [`RedisOptions::response_timeout`] by default.
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// [`RedisOptions::direct_connections`] by default.
pub const DEFAULT_DIRECT_CONNECTIONS: usize = 1;

impl RedisOptions {
    /// Options for `url` with the default prefix.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: Prefix::default(),
            ca_certificate: None,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            direct_connections: DEFAULT_DIRECT_CONNECTIONS,
            skip_version_check: false,
            wait_for_replicas: None,
        }
    }

    /// Has adds and finishing calls wait until `replicas` replicas have them, for at most
    /// `timeout` (Redis's `WAIT`, sent with the write on a direct connection of its own:
    /// `WAIT` blocks its connection, so it never shares the pipelined one; past
    /// [`direct_connections`](Self::direct_connections) a waited call opens one for itself, and
    /// `add_bulk` sends its batches one after the other). Redirects are followed as for any
    /// call.
    ///
    /// When fewer replicas confirm in time, or `WAIT` is refused (an ACL without it counts as
    /// no replica), the write has still been applied by the primary:
    /// - an add (`add`, `add_bulk`) returns an error whose
    ///   [`RedisError::is_not_replicated`](crate::RedisError::is_not_replicated) is true (kind
    ///   `Timeout`) and whose [`job_ids`](crate::RedisError::job_ids) are the ids the jobs were
    ///   added under (those Redis assigned too), so that the caller can retry with them: the
    ///   retry does not add a job twice;
    /// - a finishing call logs a warning and returns as usual: the job is finished, and should
    ///   a failover lose that, it runs again, as without the option; failing the call instead
    ///   would have the job run again even when nothing is lost.
    ///
    /// Flows, and the other calls, are not waited for. The cost is a round trip from the
    /// primary to its replicas on each of these calls (measured in the README).
    #[must_use]
    pub fn wait_for_replicas(mut self, replicas: u32, timeout: Duration) -> Self {
        self.wait_for_replicas = Some(ReplicaWait { replicas, timeout });
        self
    }

    /// Sets how long a command may wait for its reply.
    #[must_use]
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Sets how many direct connections the backend may hold.
    #[must_use]
    pub fn direct_connections(mut self, count: usize) -> Self {
        self.direct_connections = count;
        self
    }

    /// Sets whether to connect without reading `INFO` (see
    /// [`skip_version_check`](Self::skip_version_check)).
    #[must_use]
    pub fn skip_version_check(mut self, skip: bool) -> Self {
        self.skip_version_check = skip;
        self
    }

    /// Refuses settings no connection can work with.
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(problem) = bullmq_core::url_form::ambiguity(&self.url) {
            return Err(ValidationError::single("redis options", "url", problem).into());
        }
        if self.response_timeout.is_zero() {
            return Err(ValidationError::single(
                "redis options",
                "response_timeout",
                "must be greater than zero",
            )
            .into());
        }
        if let Some(wait) = self.wait_for_replicas {
            let problem = if wait.replicas == 0 {
                Some("must ask for at least one replica")
            } else if wait.timeout.is_zero() {
                Some("needs a timeout greater than zero (WAIT 0 would wait for ever)")
            } else if wait.timeout >= self.response_timeout {
                Some("needs a timeout shorter than the response timeout")
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(
                    ValidationError::single("redis options", "wait_for_replicas", problem).into(),
                );
            }
        }
        Ok(())
    }

    /// Sets the key prefix.
    #[must_use]
    pub fn prefix(mut self, prefix: Prefix) -> Self {
        self.prefix = prefix;
        self
    }

    /// Trusts the CA whose certificate (PEM, as read from a `ca.crt` file) is `pem`, for a
    /// `rediss://` server whose certificate a private CA signed.
    #[must_use]
    pub fn ca_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_certificate = Some(pem.into());
        self
    }

    /// The client for these options, with the private CA when one is set.
    pub(crate) fn client(&self) -> Result<redis::Client> {
        let context = if self.ca_certificate.is_some() {
            "set up TLS for the Redis URL"
        } else {
            "parse the Redis URL"
        };
        client_for(&self.url, self.ca_certificate.as_deref()).map_err(wrap(context))
    }

    /// The cluster or sentinel deployment these options name, or `None` for a standalone
    /// server.
    pub(crate) fn routed(&self) -> Result<Option<NodeClients>> {
        let invalid = |problem: String| {
            bullmq_core::Error::from(ValidationError::single("redis options", "url", problem))
        };
        let ca = self.ca_certificate.clone();
        let make = move |node_url: &str| client_for(node_url, ca.as_deref());
        if let Some(url) = ClusterUrl::parse(&self.url).map_err(invalid)? {
            return Ok(Some(NodeClients::cluster(url, make)));
        }
        Ok(SentinelUrl::parse(&self.url)
            .map_err(invalid)?
            .map(|url| NodeClients::sentinel(url, make)))
    }
}

impl std::fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: print it without one.
        f.debug_struct("RedisOptions")
            .field("url", &bullmq_core::redact::redact_url(&self.url))
            .field("prefix", &self.prefix)
            .field(
                "ca_certificate",
                &self.ca_certificate.as_ref().map(|_| "<pem>"),
            )
            .field("response_timeout", &self.response_timeout)
            .field("direct_connections", &self.direct_connections)
            .field("skip_version_check", &self.skip_version_check)
            .field("wait_for_replicas", &self.wait_for_replicas)
            .finish()
    }
}

/// How many replicas must confirm an add or a finishing call, and how long to wait for them;
/// see [`RedisOptions::wait_for_replicas`](crate::RedisOptions::wait_for_replicas).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaWait {
    /// Replicas that must have the write (`WAIT`'s first argument); at least 1.
    pub replicas: u32,
    /// How long to wait for them; greater than zero (`WAIT`'s 0 would wait for ever) and
    /// shorter than the response timeout.
    pub timeout: Duration,
}

impl ReplicaWait {
    /// `WAIT`'s timeout argument, in milliseconds (at least 1).
    pub(crate) fn millis(self) -> u64 {
        u64::try_from(self.timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }
}
