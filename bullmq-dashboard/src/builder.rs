//! [`Dashboard::builder`]: the connections, the authorization hook, read-only mode.

use std::sync::Arc;

use axum::Router;
use axum::http::request::Parts;
use bullmq::{AnyBackend, ConnectOptions, Prefix, QueueName};

use crate::access::{Access, AuthorizeFn};
use crate::csrf::CsrfKey;
use crate::state::{ConnEntry, Inner, Source};

/// The dashboard: build one with [`Dashboard::builder`].
#[derive(Debug, Clone, Copy)]
pub struct Dashboard;

impl Dashboard {
    /// A builder with no connection, no hook (everyone reads, nobody acts) and read-only off.
    ///
    /// ```
    /// use bullmq_dashboard::{Connection, Dashboard};
    ///
    /// let router = Dashboard::builder()
    ///     .connection("main", Connection::url("redis://127.0.0.1:6379"))
    ///     .build()
    ///     .expect("valid settings");
    /// # let _: axum::Router = router;
    /// ```
    #[must_use]
    pub fn builder() -> DashboardBuilder {
        DashboardBuilder::default()
    }
}

/// One store the dashboard shows the queues of.
///
/// ```
/// use bullmq_dashboard::Connection;
///
/// let redis = Connection::url("redis://:secret@127.0.0.1:6379").prefix("myapp");
/// let postgres = Connection::url("postgres://postgres@127.0.0.1/app").schema("jobs");
/// # let _ = (redis, postgres);
/// ```
#[derive(Clone)]
pub struct Connection {
    kind: ConnectionKind,
    prefix: Option<String>,
    schema: Option<String>,
}

#[derive(Clone)]
enum ConnectionKind {
    Url(String),
    Backend(Box<AnyBackend>),
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password.
        let kind = match &self.kind {
            ConnectionKind::Url(url) => bullmq::redact_url(url),
            ConnectionKind::Backend(_) => "backend".to_owned(),
        };
        f.debug_struct("Connection")
            .field("kind", &kind)
            .field("prefix", &self.prefix)
            .field("schema", &self.schema)
            .finish()
    }
}

impl Connection {
    /// The store `url` names (`redis://`, `rediss://`, `redis+cluster://`,
    /// `redis+sentinel://`, `postgres://`, …), connected on first use. Pages show it with
    /// its password hidden.
    #[must_use]
    pub fn url(url: impl Into<String>) -> Self {
        Self {
            kind: ConnectionKind::Url(url.into()),
            prefix: None,
            schema: None,
        }
    }

    /// A backend connected beforehand (for any queue: the dashboard reaches the others on
    /// the same connections). Its prefix or schema is the backend's.
    #[must_use]
    pub fn backend(backend: impl Into<AnyBackend>) -> Self {
        Self {
            kind: ConnectionKind::Backend(Box::new(backend.into())),
            prefix: None,
            schema: None,
        }
    }

    /// The Redis key prefix (`bull` by default); ignored on PostgreSQL.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// The PostgreSQL schema (`bullmq` by default); ignored on Redis.
    #[must_use]
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }
}

impl From<AnyBackend> for Connection {
    fn from(backend: AnyBackend) -> Self {
        Self::backend(backend)
    }
}

/// Why [`DashboardBuilder::build`] refused its settings.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No connection was given.
    #[error("no connection: add one with .connection(\"name\", Connection::url(...))")]
    NoConnection,
    /// Two connections have the same name.
    #[error("connection name {name:?} is given twice: give each connection its own name")]
    DuplicateConnection {
        /// The name.
        name: String,
    },
    /// A connection name cannot be used in a URL path.
    #[error(
        "connection name {name:?} is invalid: {cause}; use 1 to 64 letters, digits, '-', '_' or '.'"
    )]
    InvalidConnectionName {
        /// The name.
        name: String,
        /// What is wrong with it.
        cause: &'static str,
    },
    /// The system gave no random bytes for the CSRF key.
    #[error("the system has no randomness for the CSRF key (getrandom failed): check /dev/urandom")]
    NoRandomness,
    /// A connection's prefix is invalid.
    #[error("connection {name:?}: {source}")]
    InvalidPrefix {
        /// The connection's name.
        name: String,
        /// The prefix's validation error.
        source: bullmq::error::ValidationError,
    },
}

/// Settings of a [`Dashboard`]; [`build`](Self::build) checks them and gives the router.
#[derive(Default)]
pub struct DashboardBuilder {
    connections: Vec<(String, Connection)>,
    authorize: Option<Arc<AuthorizeFn>>,
    read_only: bool,
}

impl std::fmt::Debug for DashboardBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DashboardBuilder")
            .field("connections", &self.connections)
            .field("authorize", &self.authorize.is_some())
            .field("read_only", &self.read_only)
            .finish()
    }
}

fn check_name(name: &str) -> Result<(), BuildError> {
    let fail = |cause| {
        Err(BuildError::InvalidConnectionName {
            name: name.to_owned(),
            cause,
        })
    };
    if name.is_empty() {
        return fail("it is empty");
    }
    if name.len() > 64 {
        return fail("it is longer than 64 bytes");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return fail("it has a character other than a letter, a digit, '-', '_' or '.'");
    }
    Ok(())
}

impl DashboardBuilder {
    /// Adds a connection shown under `name` (1 to 64 letters, digits, `-`, `_`, `.`; it is
    /// part of the pages' URLs).
    #[must_use]
    pub fn connection(
        mut self,
        name: impl Into<String>,
        connection: impl Into<Connection>,
    ) -> Self {
        self.connections.push((name.into(), connection.into()));
        self
    }

    /// The authorization hook: given the request's head, the connection's name and the
    /// queue, what the request may do there. Without one, every request may read and none
    /// may act.
    ///
    /// ```
    /// use bullmq_dashboard::{Access, Connection, Dashboard};
    ///
    /// let router = Dashboard::builder()
    ///     .connection("main", Connection::url("redis://127.0.0.1:6379"))
    ///     .authorize(|_parts, _connection, queue| {
    ///         if queue.as_str().starts_with("internal-") { Access::None } else { Access::Full }
    ///     })
    ///     .build();
    /// # let _ = router;
    /// ```
    #[must_use]
    pub fn authorize<F>(mut self, hook: F) -> Self
    where
        F: Fn(&Parts, &str, &QueueName) -> Access + Send + Sync + 'static,
    {
        self.authorize = Some(Arc::new(hook));
        self
    }

    /// Read-only: every mutating endpoint answers 403, whatever the hook says.
    #[must_use]
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Checks the settings and builds the router, to nest under any path.
    ///
    /// # Errors
    ///
    /// [`BuildError`]: no connection, a name given twice or unfit for a URL, an invalid
    /// prefix.
    pub fn build(self) -> Result<Router, BuildError> {
        if self.connections.is_empty() {
            return Err(BuildError::NoConnection);
        }
        let mut entries: Vec<ConnEntry> = Vec::with_capacity(self.connections.len());
        for (name, connection) in self.connections {
            check_name(&name)?;
            if entries.iter().any(|e| e.name == name) {
                return Err(BuildError::DuplicateConnection { name });
            }
            let source = match connection.kind {
                ConnectionKind::Url(url) => {
                    let shown = bullmq::redact_url(&url);
                    let mut options = ConnectOptions::new(url);
                    if let Some(prefix) = connection.prefix {
                        let prefix =
                            Prefix::new(prefix).map_err(|source| BuildError::InvalidPrefix {
                                name: name.clone(),
                                source,
                            })?;
                        options = options.prefix(prefix);
                    }
                    if let Some(schema) = connection.schema {
                        options = options.schema(schema);
                    }
                    Source::Options {
                        options: Box::new(options),
                        shown,
                    }
                }
                ConnectionKind::Backend(backend) => Source::Backend(backend),
            };
            entries.push(ConnEntry::new(name, source));
        }
        let csrf = CsrfKey::random().ok_or(BuildError::NoRandomness)?;
        let inner = Inner::new(entries, self.authorize, self.read_only, csrf);
        Ok(crate::router::router(Arc::new(inner)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        assert!(matches!(
            Dashboard::builder().build(),
            Err(BuildError::NoConnection)
        ));
        let twice = Dashboard::builder()
            .connection("a", Connection::url("redis://h"))
            .connection("a", Connection::url("redis://h"))
            .build();
        assert!(matches!(twice, Err(BuildError::DuplicateConnection { .. })));
        let slash = Dashboard::builder()
            .connection("a/b", Connection::url("redis://h"))
            .build();
        let message = slash.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("\"a/b\"") && message.contains("use 1 to 64"),
            "{message}"
        );
        let prefix = Dashboard::builder()
            .connection("a", Connection::url("redis://h").prefix("has space"))
            .build();
        assert!(matches!(prefix, Err(BuildError::InvalidPrefix { .. })));
        let debug = format!("{:?}", Connection::url("redis://:hunter2@h"));
        assert!(!debug.contains("hunter2"), "{debug}");
    }
}
