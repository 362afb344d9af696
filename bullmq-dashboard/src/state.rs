//! What every handler shares: the connections, the hook, the CSRF key.

use std::sync::Arc;

use axum::http::request::Parts;
use bullmq::backend::Lifecycle as _;
use bullmq::{AnyBackend, ConnectOptions, Queue, QueueName};
use tokio::sync::OnceCell;

use crate::access::{Access, AuthorizeFn};
use crate::csrf::CsrfKey;
use crate::error::DashboardError;

/// The queue name the dashboard connects with before it knows any queue; nothing is
/// written under it.
const PLACEHOLDER_QUEUE: &str = "bullmq-dashboard";

/// Where a connection's backend comes from.
pub(crate) enum Source {
    /// Connected on first use; `shown` is the URL with its password hidden.
    Options {
        options: Box<ConnectOptions>,
        shown: String,
    },
    /// Given connected.
    Backend(Box<AnyBackend>),
}

/// One named connection.
pub(crate) struct ConnEntry {
    pub(crate) name: String,
    source: Source,
    backend: OnceCell<AnyBackend>,
}

impl ConnEntry {
    pub(crate) fn new(name: String, source: Source) -> Self {
        Self {
            name,
            source,
            backend: OnceCell::new(),
        }
    }

    /// The connection's backend (for no queue in particular), connecting the first time;
    /// a failed attempt is tried again on the next request.
    pub(crate) async fn backend(&self) -> Result<&AnyBackend, DashboardError> {
        self.backend
            .get_or_try_init(|| async {
                match &self.source {
                    Source::Options { options, .. } => options
                        .connect(PLACEHOLDER_QUEUE)
                        .await
                        .map_err(|e| DashboardError::Connect {
                            connection: self.name.clone(),
                            cause: e.to_string(),
                        }),
                    Source::Backend(backend) => Ok((**backend).clone()),
                }
            })
            .await
    }

    /// A queue of this connection, on its shared connections.
    pub(crate) async fn queue(
        &self,
        name: &QueueName,
    ) -> Result<Queue<AnyBackend>, DashboardError> {
        let backend = self.backend().await?.for_queue(name, None);
        Ok(Queue::try_new(name.clone(), backend)?)
    }

    /// What the pages say about where the connection goes: never a password.
    pub(crate) fn shown(&self) -> String {
        match &self.source {
            Source::Options { shown, .. } => shown.clone(),
            Source::Backend(backend) => describe(backend),
        }
    }

    /// `redis` or `postgres`, once connected.
    pub(crate) fn store(&self) -> Option<&'static str> {
        self.backend.get().map(store_of)
    }
}

/// The store a backend is on.
pub(crate) fn store_of(backend: &AnyBackend) -> &'static str {
    match backend {
        AnyBackend::Redis(_) => "redis",
        AnyBackend::Postgres(_) => "postgres",
        _ => "store",
    }
}

/// A backend given connected, described by its store and prefix or schema.
fn describe(backend: &AnyBackend) -> String {
    match backend {
        AnyBackend::Redis(b) => format!("redis (prefix {})", b.prefix()),
        AnyBackend::Postgres(b) => format!("postgres (schema {})", b.connection().schema()),
        _ => "store".to_owned(),
    }
}

/// Everything the handlers share.
pub(crate) struct Inner {
    pub(crate) connections: Vec<ConnEntry>,
    authorize: Option<Arc<AuthorizeFn>>,
    read_only: bool,
    pub(crate) csrf: CsrfKey,
    /// The bulk runs on search matches, for their progress pages.
    pub(crate) runs: crate::runs::Runs,
}

/// The handlers' state.
pub(crate) type Shared = Arc<Inner>;

impl Inner {
    pub(crate) fn new(
        connections: Vec<ConnEntry>,
        authorize: Option<Arc<AuthorizeFn>>,
        read_only: bool,
        csrf: CsrfKey,
    ) -> Self {
        Self {
            connections,
            authorize,
            read_only,
            csrf,
            runs: crate::runs::Runs::default(),
        }
    }

    /// The connection named `name`.
    pub(crate) fn connection(&self, name: &str) -> Result<&ConnEntry, DashboardError> {
        self.connections
            .iter()
            .find(|c| c.name == name)
            .ok_or(DashboardError::NotFound)
    }

    /// What the request may do on `queue` of `connection`: the hook's answer (read-only
    /// without a hook), capped at read-only in read-only mode.
    pub(crate) fn access(&self, parts: &Parts, connection: &str, queue: &QueueName) -> Access {
        let granted = self
            .authorize
            .as_ref()
            .map_or(Access::ReadOnly, |hook| hook(parts, connection, queue));
        if self.read_only {
            granted.min(Access::ReadOnly)
        } else {
            granted
        }
    }
}
