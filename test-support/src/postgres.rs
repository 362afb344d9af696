//! The test PostgreSQL server: a plain connection to it, and schemas of a test's own, dropped
//! when the test ends (even when it fails), so that tests run in parallel on one shared
//! server.

use bullmq_postgres::sqlx::{self, ConnectOptions as _, Connection as _, PgConnection};
use bullmq_postgres::{PostgresBackend, PostgresOptions, SchemaName};

pub use crate::urls::database_url;

/// A schema name no other test uses: `<tag>_<uuid>` (the uuid is 32 hex digits, so `tag`
/// may have up to 30 characters).
pub fn unique_schema(tag: &str) -> SchemaName {
    let name = format!("{tag}_{}", uuid::Uuid::new_v4().simple());
    SchemaName::new(name).expect("a valid test schema name")
}

/// A new connection to the server at `url` (no schema pinned).
pub async fn connect(url: &str) -> Result<PgConnection, sqlx::Error> {
    let options: sqlx::postgres::PgConnectOptions = url.parse().expect("the URL parses");
    options.connect().await
}

/// What to do when the test server cannot be reached.
fn unreachable(url: &str, e: &dyn std::fmt::Display) -> String {
    format!(
        "cannot connect to PostgreSQL at {url}: {e}. These tests need a running PostgreSQL 13+ \
         with a database `test` (or DATABASE_URL pointing at one); .ci/run starts the local \
         cluster."
    )
}

/// A plain connection to the test server (no schema pinned), for setting up and inspecting.
pub async fn admin() -> PgConnection {
    let url = database_url();
    connect(&url)
        .await
        .unwrap_or_else(|e| panic!("{}", unreachable(&url, &e)))
}

/// A schema name no other test uses; the schema itself (if made) is dropped, with everything
/// in it, when this is dropped.
pub struct SchemaGuard {
    name: SchemaName,
    /// Panic when the drop fails (unless the test already panics); else ignore it.
    strict: bool,
    /// An environment variable that, when set, keeps the schema (to look at a failed test's
    /// rows).
    keep_if: Option<&'static str>,
}

impl SchemaGuard {
    /// A fresh name, [`unique_schema`]`(tag)` (the schema is not created).
    pub fn new(tag: &str) -> Self {
        Self::of(unique_schema(tag))
    }

    /// Guards `name`.
    pub fn of(name: SchemaName) -> Self {
        Self {
            name,
            strict: false,
            keep_if: None,
        }
    }

    /// Makes a failed drop fail the test.
    #[must_use]
    pub fn strict(mut self) -> Self {
        self.strict = true;
        self
    }

    /// Keeps the schema when the environment variable `var` is set.
    #[must_use]
    pub fn kept_if(mut self, var: &'static str) -> Self {
        self.keep_if = Some(var);
        self
    }

    /// The name.
    pub fn name(&self) -> &SchemaName {
        &self.name
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        self.name.as_str()
    }

    /// Options for this schema on the test server (not migrating).
    pub fn options(&self) -> PostgresOptions {
        PostgresOptions::new(database_url()).schema(self.name.clone())
    }

    /// A new backend (its own pool) for `queue` in this schema, migrating it first.
    pub async fn backend(&self, queue: &str) -> PostgresBackend {
        let queue = bullmq_core::QueueName::new(queue).expect("a valid queue name");
        PostgresBackend::connect(&self.options().migrate(true), queue)
            .await
            .unwrap_or_else(|e| panic!("{}", unreachable(&database_url(), &e)))
    }
}

impl Drop for SchemaGuard {
    fn drop(&mut self) {
        if let Some(var) = self.keep_if
            && std::env::var_os(var).is_some()
        {
            eprintln!("kept schema {}", self.name.as_str());
            return;
        }
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name.quoted());
        // Drop runs inside the test's runtime, which must not be blocked on: a thread of its
        // own with a runtime of its own does the dropping.
        let dropping = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime to drop the schema");
            runtime.block_on(async {
                let mut conn = connect(&database_url()).await?;
                sqlx::raw_sql(&sql).execute(&mut conn).await?;
                let _ = conn.close().await;
                Ok::<_, sqlx::Error>(())
            })
        });
        let dropped = dropping
            .join()
            .map_err(|_| "the dropping thread panicked".to_owned())
            .and_then(|r| r.map_err(|e| e.to_string()));
        if let Err(e) = dropped
            && self.strict
            && !std::thread::panicking()
        {
            panic!(
                "dropping the test schema {} failed: {e}",
                self.name.as_str()
            );
        }
    }
}

/// Terminates the sessions named exactly `application_name` (never the caller's); how many.
pub async fn terminate(admin: &mut PgConnection, application_name: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity \
         WHERE application_name = $1 AND pid <> pg_backend_pid()) t WHERE killed",
    )
    .bind(application_name)
    .fetch_one(admin)
    .await
    .expect("pg_terminate_backend")
}
