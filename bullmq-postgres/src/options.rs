//! How to reach PostgreSQL and which schema to use.

use std::str::FromStr;
use std::time::Duration;

use bullmq_core::Result;
use bullmq_core::options::ValidationError;
use sqlx::postgres::PgConnectOptions;

use bullmq_core::url_form;

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
        self.check_url()
    }

    /// Refuses a URL that could be read two ways, and every parameter sqlx 0.8 does not read
    /// (it would log it, value and all, and ignore it), naming the parameter, never its value.
    fn check_url(&self) -> Result<()> {
        let fail = |message: String| {
            Err(ValidationError::single("postgres options", "url", message).into())
        };
        if let Some(problem) = url_form::ambiguity(&self.url) {
            return fail(problem.to_owned());
        }
        let Some(parts) = url_form::split(&self.url) else {
            return fail(
                "is not a URL (`postgres://user:password@host:port/database?param=value`); \
                 libpq's keyword form (`host=… user=…`) is not read by sqlx"
                    .to_owned(),
            );
        };
        for (key, _) in parts.query.map(url_form::pairs).into_iter().flatten() {
            let key = url_form::decode(key);
            if key == "sslpassword" {
                return fail(
                    "has `sslpassword`, which sqlx 0.8 does not support (it cannot read an \
                     encrypted client key): decrypt the key (`openssl pkey -in key.pem -out \
                     plain.pem`), point sslkey at it, and drop sslpassword"
                        .to_owned(),
                );
            }
            let known = PG_KEYS.contains(&key.as_str())
                || (key.starts_with("options[") && key.ends_with(']'));
            if !known {
                return fail(format!(
                    "has the parameter `{}`, which sqlx 0.8 does not read: remove it, or use one \
                     of {}",
                    printable(&key),
                    PG_KEYS.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The certificate and key files the URL names, `(parameter, path)`, form-decoded.
    fn files(&self) -> Vec<(String, String)> {
        let Some(query) = url_form::split(&self.url).and_then(|parts| parts.query) else {
            return Vec::new();
        };
        url_form::pairs(query)
            .filter_map(|(key, value)| {
                let key = url_form::decode(key);
                let file = matches!(
                    key.as_str(),
                    "sslrootcert"
                        | "ssl-root-cert"
                        | "ssl-ca"
                        | "sslcert"
                        | "ssl-cert"
                        | "sslkey"
                        | "ssl-key"
                );
                file.then(|| (key, url_form::decode(value.unwrap_or(""))))
            })
            .collect()
    }

    /// Whether the URL sets `sslmode` itself.
    fn names_ssl_mode(&self) -> bool {
        url_form::split(&self.url)
            .and_then(|parts| parts.query)
            .is_some_and(|query| {
                url_form::pairs(query).any(|(key, _)| {
                    matches!(url_form::decode(key).as_str(), "sslmode" | "ssl-mode")
                })
            })
    }

    /// What stops TLS before any connection is tried, as the error `open` would give: TLS
    /// asked for without the `tls` feature, or a certificate file that cannot be read.
    pub(crate) fn tls_precheck(
        &self,
        connect: &PgConnectOptions,
    ) -> std::result::Result<(), sqlx::Error> {
        use sqlx::postgres::PgSslMode;
        let mode = connect.get_ssl_mode();
        if matches!(mode, PgSslMode::Disable) {
            return Ok(());
        }
        if cfg!(not(feature = "tls")) {
            if matches!(mode, PgSslMode::Allow | PgSslMode::Prefer) {
                return Ok(());
            }
            return Err(sqlx::Error::Tls(
                format!("sslmode={} needs TLS, {NOT_BUILT}", ssl_mode_name(mode)).into(),
            ));
        }
        for (key, path) in self.files() {
            if let Err(err) = std::fs::metadata(&path).and_then(|_| std::fs::File::open(&path)) {
                return Err(sqlx::Error::Tls(
                    format!("cannot read the {key} file {path:?}: {err}").into(),
                ));
            }
        }
        Ok(())
    }

    /// The URL's settings with the schema pinned as every connection's `search_path`, as
    /// upstream's `-c search_path="<schema>"` startup option: the command files name no
    /// schema, so this is what points them at it.
    pub(crate) fn connect_options(&self) -> Result<PgConnectOptions> {
        let options = PgConnectOptions::from_str(&self.url).map_err(wrap("parse the URL"))?;
        warn_if_plaintext(&options, self.names_ssl_mode());
        Ok(options.options([("search_path", self.schema.quoted())]))
    }
}

/// What an error about TLS without the `tls` feature says (the text
/// [`ConnectFailure`](crate::ConnectFailure) classes as `Tls(NotBuilt)`).
pub(crate) const NOT_BUILT: &str = "but bullmq-postgres was built without TLS support: enable \
     its `tls` feature (feature `tls` or `postgres-tls` of bullmq)";

// The URL parameters sqlx 0.8 reads (`options[…]` too); any other is refused.
use bullmq_core::url_form::POSTGRES_KEYS as PG_KEYS;

/// `key` for an error message: at most 40 characters, control characters escaped.
fn printable(key: &str) -> String {
    let short: String = key.chars().take(40).collect();
    let short = short.escape_debug().to_string();
    if key.chars().count() > 40 {
        format!("{short}…")
    } else {
        short
    }
}

fn ssl_mode_name(mode: sqlx::postgres::PgSslMode) -> &'static str {
    use sqlx::postgres::PgSslMode as M;
    match mode {
        M::Disable => "disable",
        M::Allow => "allow",
        M::Prefer => "prefer",
        M::Require => "require",
        M::VerifyCa => "verify-ca",
        M::VerifyFull => "verify-full",
    }
}

/// Without the `tls` feature, `sslmode=prefer` (libpq's default) or `allow` connects in
/// plaintext even to a server that offers TLS: said once per process, at `warn`, when the URL
/// asks for it or the server is not on this machine (where plaintext is the usual choice).
fn warn_if_plaintext(options: &PgConnectOptions, mode_in_url: bool) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    if let Some(message) = plaintext_warning(options, mode_in_url, cfg!(feature = "tls")) {
        WARNED.call_once(|| {
            tracing::warn!(server.address = options.get_host(), "{message}");
        });
    }
}

/// The warning [`warn_if_plaintext`] gives, if any.
fn plaintext_warning(
    options: &PgConnectOptions,
    mode_in_url: bool,
    tls_built: bool,
) -> Option<&'static str> {
    use sqlx::postgres::PgSslMode;
    let host = options.get_host();
    let local = options.get_socket().is_some()
        || host.starts_with('/')
        || matches!(host, "localhost" | "127.0.0.1" | "::1");
    let optional = matches!(options.get_ssl_mode(), PgSslMode::Prefer | PgSslMode::Allow);
    (!tls_built && optional && (mode_in_url || !local)).then_some(
        "PostgreSQL: connecting without TLS (bullmq-postgres is built without its `tls` \
         feature, so sslmode=prefer or allow cannot use it); enable the `tls` feature, or set \
         sslmode=disable to say plaintext is intended",
    )
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

    #[test]
    fn unknown_parameters_are_refused_by_name_never_by_value() {
        for url in [
            "postgres://db/app?sslpassword=s3cret",
            "postgres://db/app?ssl%70assword=s3cret",
            "postgres://db/app?pasword=s3cret",
            "postgres://db/app?connect_timeout=s3cret",
        ] {
            let err = PostgresOptions::new(url).check().expect_err(url);
            let text = err.to_string();
            assert!(text.contains("url"), "{url}: {text}");
            assert!(!text.contains("s3cret"), "{url}: {text}");
        }
        let err = PostgresOptions::new("postgres://db/app?pasword=s3cret")
            .check()
            .expect_err("unknown");
        assert!(err.to_string().contains("`pasword`"), "{err}");
        // Keys as sqlx decodes them, and every key it reads, are accepted.
        for url in [
            "postgres://db/app?passw%6Frd=x&sslmode=disable&application_name=a",
            "postgres://db/app?options[work_mem]=8MB&statement-cache-capacity=10",
            "postgres://bob:p@ss@db/app?user=bob@corp",
        ] {
            PostgresOptions::new(url).check().expect(url);
        }
    }

    #[test]
    fn a_password_with_a_raw_slash_query_or_hash_is_refused_without_a_word_of_it() {
        for password in ["pa/QZ", "pa?QZ", "pa#QZ", "12/QZ", "p@QZ/w?QZ#x"] {
            let url = format!("postgres://bob:{password}@db:5432/app");
            let err = PostgresOptions::new(url.as_str()).check().expect_err(&url);
            let text = err.to_string();
            assert!(text.contains("percent-encode"), "{url}: {text}");
            assert!(!text.contains("QZ"), "{url}: {text}");
        }
    }

    #[test]
    fn plaintext_prefer_is_warned_when_asked_for_or_remote() {
        let opts = |url: &str| PgConnectOptions::from_str(url).expect("valid");
        let local = opts("postgres://127.0.0.1/app?sslmode=prefer");
        assert!(plaintext_warning(&local, true, false).is_some());
        assert!(plaintext_warning(&local, false, false).is_none());
        assert!(plaintext_warning(&local, true, true).is_none());
        let remote = opts("postgres://db.example/app");
        assert!(plaintext_warning(&remote, false, false).is_some());
        let disabled = opts("postgres://db.example/app?sslmode=disable");
        assert!(plaintext_warning(&disabled, true, false).is_none());
        assert!(PostgresOptions::new("postgres://h/a?ssl%2Dmode=prefer").names_ssl_mode());
        assert!(!PostgresOptions::new("postgres://h/a").names_ssl_mode());
    }

    /// Built without `tls`, a URL that needs TLS fails before any connection, classed
    /// `Tls(NotBuilt)`, with a message naming the feature to turn on.
    #[cfg(not(feature = "tls"))]
    #[test]
    fn tls_without_the_feature_names_the_feature() {
        use crate::{ConnectFailure, TlsFailure};
        for mode in ["require", "verify-ca", "verify-full"] {
            let options =
                PostgresOptions::new(format!("postgres://127.0.0.1:1/app?sslmode={mode}"));
            let connect = options.connect_options().expect("valid");
            let err = options.tls_precheck(&connect).expect_err(mode);
            assert_eq!(
                ConnectFailure::of(&err),
                ConnectFailure::Tls(TlsFailure::NotBuilt)
            );
            assert!(err.to_string().contains("`tls` feature"), "{err}");
            assert!(!err.to_string().contains("SQLx"), "{err}");
        }
        let options = PostgresOptions::new("postgres://127.0.0.1:1/app?sslmode=prefer");
        let connect = options.connect_options().expect("valid");
        options
            .tls_precheck(&connect)
            .expect("prefer connects in plaintext");
    }

    /// A certificate file that cannot be read is `Tls(BadFile)`, not a refused connection.
    #[cfg(feature = "tls")]
    #[test]
    fn an_unreadable_certificate_file_is_a_bad_file() {
        use crate::{ConnectFailure, TlsFailure};
        for key in ["sslrootcert", "sslcert", "ssl-key"] {
            let options = PostgresOptions::new(format!(
                "postgres://127.0.0.1:1/app?sslmode=verify-full&{key}=/nonexistent/x.pem"
            ));
            let connect = options.connect_options().expect("valid");
            let err = options.tls_precheck(&connect).expect_err(key);
            assert_eq!(
                ConnectFailure::of(&err),
                ConnectFailure::Tls(TlsFailure::BadFile)
            );
        }
    }
}
