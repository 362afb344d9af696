//! [`connect`]: a backend for a queue on the store a URL names, chosen by its scheme.

use bullmq_core::options::ValidationError;
use bullmq_core::{Prefix, QueueName};

use super::AnyBackend;

/// Why [`connect`] gave no backend. Never shows the URL: it may hold a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL's scheme names no store this crate knows.
    #[error(
        "unsupported URL scheme {scheme:?}: use redis://, rediss://, redis+unix://, unix://, \
         redis+cluster://, rediss+cluster://, redis+sentinel://, rediss+sentinel:// (Redis) or postgres://, postgresql:// (PostgreSQL)"
    )]
    UnknownScheme {
        /// The scheme, or an empty string when the URL has none.
        scheme: String,
    },
    /// The URL names a store whose feature was not compiled in.
    #[error("{scheme}:// needs bullmq's `{feature}` feature, which this build does not have")]
    FeatureNotCompiled {
        /// The URL's scheme.
        scheme: String,
        /// The feature that would handle it.
        feature: &'static str,
    },
    /// The queue name, or a PostgreSQL schema name, is invalid.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The store refused or could not be reached.
    #[error(transparent)]
    Backend(#[from] bullmq_core::Error),
}

/// The stores a scheme can name.
enum Store {
    Redis,
    Postgres,
}

impl Store {
    /// The feature that compiles its backend in.
    fn feature(&self) -> &'static str {
        match self {
            Self::Redis => "redis",
            Self::Postgres => "postgres",
        }
    }
}

/// The store `url` names, by its scheme.
fn store_of(url: &str) -> Result<(Store, &str), ConnectError> {
    let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
    // Anything else before `://` is not a scheme, and might be part of a secret: not shown.
    let shown = if scheme
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        scheme
    } else {
        ""
    };
    match scheme.to_ascii_lowercase().as_str() {
        "redis" | "rediss" | "redis+unix" | "unix" | "redis+cluster" | "rediss+cluster"
        | "redis+sentinel" | "rediss+sentinel" => Ok((Store::Redis, shown)),
        "postgres" | "postgresql" => Ok((Store::Postgres, shown)),
        _ => Err(ConnectError::UnknownScheme {
            scheme: shown.to_owned(),
        }),
    }
}

/// Where and how [`connect`] connects: the URL, and the settings of either store that a URL
/// does not carry.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use bullmq::{ConnectOptions, Queue};
///
/// let url = std::env::var("QUEUE_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
/// let backend = ConnectOptions::new(url).migrate(true).connect("emails").await?;
/// let queue = Queue::from_backend(backend)?;
/// # let _ = queue; Ok(()) }
/// ```
#[derive(Clone)]
pub struct ConnectOptions {
    url: String,
    prefix: Option<Prefix>,
    schema: Option<String>,
    migrate: bool,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password.
        f.debug_struct("ConnectOptions")
            .field("prefix", &self.prefix)
            .field("schema", &self.schema)
            .field("migrate", &self.migrate)
            .finish_non_exhaustive()
    }
}

impl ConnectOptions {
    /// Options for `url`, with each store's defaults.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            prefix: None,
            schema: None,
            migrate: false,
        }
    }

    /// The Redis key prefix (`bull` by default); PostgreSQL has none and ignores it.
    #[must_use]
    pub fn prefix(mut self, prefix: Prefix) -> Self {
        self.prefix = Some(prefix);
        self
    }

    /// The PostgreSQL schema (`bullmq` by default); Redis ignores it.
    #[must_use]
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    /// Whether connecting to PostgreSQL applies pending migrations (off by default); Redis
    /// ignores it.
    #[must_use]
    pub fn migrate(mut self, migrate: bool) -> Self {
        self.migrate = migrate;
        self
    }

    /// A backend for queue `queue` on the store the URL names.
    ///
    /// # Errors
    ///
    /// [`ConnectError`]: an unknown scheme, a store whose feature is not compiled in, an
    /// invalid queue or schema name, or the store's own refusal.
    pub async fn connect(&self, queue: &str) -> Result<AnyBackend, ConnectError> {
        let (store, scheme) = store_of(&self.url)?;
        let queue = QueueName::new(queue)?;
        match store {
            #[cfg(feature = "redis")]
            Store::Redis => self.redis(queue).await,
            #[cfg(feature = "postgres")]
            Store::Postgres => self.postgres(queue).await,
            // Reached only for a store whose feature is off.
            #[allow(unreachable_patterns)]
            other => Err(ConnectError::FeatureNotCompiled {
                scheme: scheme.to_owned(),
                feature: other.feature(),
            }),
        }
    }

    #[cfg(feature = "redis")]
    async fn redis(&self, queue: QueueName) -> Result<AnyBackend, ConnectError> {
        // `rediss://` without the `tls` feature is refused by the backend, which knows.
        let mut options = bullmq_redis::RedisOptions::new(self.url.clone());
        if let Some(prefix) = &self.prefix {
            options = options.prefix(prefix.clone());
        }
        Ok(bullmq_redis::RedisBackend::connect(&options, queue)
            .await?
            .into())
    }

    #[cfg(feature = "postgres")]
    async fn postgres(&self, queue: QueueName) -> Result<AnyBackend, ConnectError> {
        let mut options =
            bullmq_postgres::PostgresOptions::new(self.url.clone()).migrate(self.migrate);
        if let Some(schema) = &self.schema {
            options = options.schema(bullmq_postgres::SchemaName::new(schema.clone())?);
        }
        Ok(bullmq_postgres::PostgresBackend::connect(&options, queue)
            .await?
            .into())
    }
}

/// A backend for queue `queue` on the store `url` names, by its scheme: `redis://`,
/// `rediss://`, `redis+unix://` and `unix://` for Redis, `postgres://` and `postgresql://`
/// for PostgreSQL; each store's defaults otherwise (see [`ConnectOptions`] for a prefix, a
/// schema or migrations).
///
/// # Errors
///
/// See [`ConnectOptions::connect`].
pub async fn connect(url: &str, queue: &str) -> Result<AnyBackend, ConnectError> {
    ConnectOptions::new(url).connect(queue).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_name_their_store_and_others_are_refused_without_the_url() {
        for url in [
            "redis://h",
            "rediss://h",
            "redis+unix:///s",
            "unix:///s",
            "REDIS://h",
        ] {
            assert!(matches!(store_of(url), Ok((Store::Redis, _))), "{url}");
        }
        for url in ["postgres://h/db", "postgresql://h/db"] {
            assert!(matches!(store_of(url), Ok((Store::Postgres, _))), "{url}");
        }
        let err = store_of("mysql://root:hunter2@h")
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("\"mysql\"")),
            "{err:?}"
        );
        let err = store_of("root:hunter2@h:6379").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| !e.contains("hunter2")));
        let err = store_of("user:pass@evil://h").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| !e.contains("pass") && e.contains("scheme \"\"")));
    }
}
