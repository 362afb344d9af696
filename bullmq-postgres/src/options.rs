//! How to reach PostgreSQL and which schema to use.

use std::str::FromStr;
use std::time::Duration;

use bullmq_core::Result;
use bullmq_core::options::ValidationError;
use sqlx::postgres::PgConnectOptions;

use crate::error::wrap;
use crate::schema_name::SchemaName;

/// [`PostgresOptions::max_connections`] by default: node-postgres' default pool size.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// [`PostgresOptions::connect_timeout`] by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of a PostgreSQL backend: the counterpart of Node.js BullMQ's PostgreSQL
/// `connection` (`{ connectionString, schema, migrate, skipVersionCheck }`).
///
/// ```
/// use bullmq_postgres::{PostgresOptions, SchemaName};
///
/// let options = PostgresOptions::new("postgres://postgres@127.0.0.1:5432/app")
///     .schema(SchemaName::new("jobs").unwrap())
///     .migrate(true);
/// assert!(options.migrate);
/// ```
#[derive(Clone)]
pub struct PostgresOptions {
    /// `postgres://[user[:password]@]host[:port]/database[?param=value…]`; the parameters sqlx
    /// understands (`sslmode`, `application_name`, `options`, …) are honoured.
    pub url: String,
    /// The schema every queue lives in; `bullmq` by default, like Node.js.
    pub schema: SchemaName,
    /// Whether connecting applies pending migrations. Off by default, as upstream: a process
    /// that connects then only checks that the schema is ready, and fails with
    /// [`PostgresError::SchemaMigrationRequired`](crate::PostgresError::SchemaMigrationRequired)
    /// otherwise. [`migrate`](crate::migrate) migrates on its own.
    pub migrate: bool,
    /// Skips the server version check (PostgreSQL 13 or newer), as upstream's
    /// `skipVersionCheck`. Off by default.
    pub skip_version_check: bool,
    /// How many connections commands may use at once, 10 by default. Event reads and the
    /// `LISTEN` bookkeeping use a second pool with the same bound, opened only as they need
    /// it; the dedicated `LISTEN` connections are not counted.
    pub max_connections: u32,
    /// How long opening a connection, or waiting for a free pooled one, may take. 10 s by
    /// default.
    pub connect_timeout: Duration,
    /// Whether workers and `QueueEvents` wait on a dedicated `LISTEN` connection, as upstream
    /// does (on by default). Off, they poll every [`poll_interval`](Self::poll_interval)
    /// instead: for poolers in front of PostgreSQL where `LISTEN` hears nothing (PgBouncer in
    /// transaction mode). Without the named `LISTEN` connection, `get_workers` cannot see them.
    pub listen: bool,
    /// How often a wait checks the tables when it cannot rely on notifications: always with
    /// `listen` off, and while the `LISTEN` connection is down and being replaced (jobs added
    /// meanwhile are still picked up). 500 ms by default.
    pub poll_interval: Duration,
    /// How long `QueueEvents` holds back newer events behind a transaction that is still
    /// writing an older one (so that every event is delivered once and in order), before it
    /// gives up on that transaction. 30 s by default.
    pub event_hold_max: Duration,
}

/// [`PostgresOptions::poll_interval`] by default.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// [`PostgresOptions::event_hold_max`] by default.
pub const DEFAULT_EVENT_HOLD_MAX: Duration = Duration::from_secs(30);

impl PostgresOptions {
    /// Options for `url` with the default schema, no migration on connect.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: SchemaName::default(),
            migrate: false,
            skip_version_check: false,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            listen: true,
            poll_interval: DEFAULT_POLL_INTERVAL,
            event_hold_max: DEFAULT_EVENT_HOLD_MAX,
        }
    }

    /// Sets the schema.
    #[must_use]
    pub fn schema(mut self, schema: SchemaName) -> Self {
        self.schema = schema;
        self
    }

    /// Sets whether connecting applies pending migrations.
    #[must_use]
    pub fn migrate(mut self, migrate: bool) -> Self {
        self.migrate = migrate;
        self
    }

    /// Sets whether the server version check is skipped.
    #[must_use]
    pub fn skip_version_check(mut self, skip: bool) -> Self {
        self.skip_version_check = skip;
        self
    }

    /// Sets the pool size.
    #[must_use]
    pub fn max_connections(mut self, max: u32) -> Self {
        self.max_connections = max;
        self
    }

    /// Sets the connect timeout.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets whether waits listen for notifications (`true`) or poll.
    #[must_use]
    pub fn listen(mut self, listen: bool) -> Self {
        self.listen = listen;
        self
    }

    /// Sets how often a wait without notifications checks for work.
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Sets how long events may be held back behind one writing transaction.
    #[must_use]
    pub fn event_hold_max(mut self, max: Duration) -> Self {
        self.event_hold_max = max;
        self
    }

    /// Refuses settings no connection can work with.
    pub(crate) fn check(&self) -> Result<()> {
        let fail = |field: &str, message: &str| {
            Err(ValidationError::single("postgres options", field, message).into())
        };
        if self.max_connections == 0 {
            return fail("max_connections", "must be at least 1");
        }
        if self.connect_timeout.is_zero() {
            return fail("connect_timeout", "must be greater than zero");
        }
        if self.poll_interval < Duration::from_millis(1) {
            return fail("poll_interval", "must be at least 1 ms");
        }
        if self.event_hold_max < Duration::from_millis(1) {
            return fail("event_hold_max", "must be at least 1 ms");
        }
        Ok(())
    }

    /// The URL's settings with the schema pinned as every connection's `search_path`, as
    /// upstream's `-c search_path="<schema>"` startup option: the command files name no
    /// schema, so this is what points them at it.
    pub(crate) fn connect_options(&self) -> Result<PgConnectOptions> {
        let options = PgConnectOptions::from_str(&self.url).map_err(wrap("parse the URL"))?;
        warn_if_plaintext_by_default(&options);
        Ok(options.options([("search_path", self.schema.quoted())]))
    }
}

/// Without the `tls` feature, libpq's default `sslmode=prefer` (or `allow`) connects in
/// plaintext even to a server that offers TLS: said once per process, for a server that is
/// not on this machine (where plaintext is the usual choice).
fn warn_if_plaintext_by_default(options: &PgConnectOptions) {
    use sqlx::postgres::PgSslMode;
    static WARNED: std::sync::Once = std::sync::Once::new();
    let host = options.get_host();
    let local = options.get_socket().is_some()
        || host.starts_with('/')
        || matches!(host, "localhost" | "127.0.0.1" | "::1");
    let optional = matches!(options.get_ssl_mode(), PgSslMode::Prefer | PgSslMode::Allow);
    if cfg!(not(feature = "tls")) && optional && !local {
        WARNED.call_once(|| {
            tracing::warn!(
                server.address = host,
                "PostgreSQL: connecting without TLS (bullmq-postgres is built without its `tls` \
                 feature, so sslmode=prefer cannot use it); enable the `tls` feature, or set \
                 sslmode=disable to say plaintext is intended"
            );
        });
    }
}

impl std::fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: print it without one.
        f.debug_struct("PostgresOptions")
            .field("url", &bullmq_core::redact::redact_url(&self.url))
            .field("schema", &self.schema)
            .field("migrate", &self.migrate)
            .field("skip_version_check", &self.skip_version_check)
            .field("max_connections", &self.max_connections)
            .field("connect_timeout", &self.connect_timeout)
            .field("listen", &self.listen)
            .field("poll_interval", &self.poll_interval)
            .field("event_hold_max", &self.event_hold_max)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_upstream() {
        let options = PostgresOptions::new("postgres://localhost/db");
        assert_eq!(options.schema.as_str(), "bullmq");
        assert!(!options.migrate);
        assert!(!options.skip_version_check);
        assert!(options.check().is_ok());
    }

    #[test]
    fn debug_hides_the_password() {
        let options = PostgresOptions::new("postgres://bob:s3cret@db:5432/app?sslmode=disable");
        let shown = format!("{options:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("postgres://bob:***@db:5432/app"), "{shown}");
    }

    #[test]
    fn zero_pool_or_timeout_is_refused() {
        let url = "postgres://localhost/db";
        let err = PostgresOptions::new(url)
            .max_connections(0)
            .check()
            .expect_err("empty pool");
        assert!(err.to_string().contains("max_connections"), "{err}");
        let err = PostgresOptions::new(url)
            .connect_timeout(Duration::ZERO)
            .check()
            .expect_err("no time");
        assert!(err.to_string().contains("connect_timeout"), "{err}");
    }

    #[test]
    fn search_path_is_pinned_quoted_after_any_url_options() {
        let options = PostgresOptions::new("postgres://localhost/db?options=-c%20work_mem%3D8MB")
            .schema(SchemaName::new("Jobs").expect("valid"));
        let connect = options.connect_options().expect("valid URL");
        assert_eq!(
            connect.get_options(),
            Some("-c work_mem=8MB -c search_path=\"Jobs\"")
        );
    }
}
