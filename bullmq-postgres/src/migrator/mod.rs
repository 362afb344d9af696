//! Upstream's migration runner: brings a schema to the version this client's SQL needs, and
//! checks, without changing anything, that a schema is ready for it.
//!
//! Compatible with Node.js BullMQ's `runMigrations` / `assertSchemaCompatibility`
//! (`src/postgres/migrator.ts`) both ways: the same ledger rows, the same migration SQL (the
//! pinned package's, verbatim), the same advisory lock, so Node.js and Rust processes may
//! start together against one schema and either may migrate it.
//!
//! One difference, on purpose: upstream accepts a schema with any ledger at all when it
//! connects without migrating, even one several migrations behind the SQL it then runs. Here
//! a schema behind [`LATEST_VERSION`] is refused with
//! [`PostgresError::SchemaMigrationRequired`] too, since the embedded commands may call
//! functions only the later migrations create or fix.

mod ledger;
mod server_version;

use sqlx::{Connection as _, PgConnection};

use crate::error::{PostgresError, is_undefined_table, wrap};
use crate::options::PostgresOptions;
use crate::schema_name::SchemaName;
use crate::sql::migrations::{ALL, LATEST_VERSION};
use bullmq_core::Result;

pub use server_version::{MINIMUM_POSTGRES_VERSION, RECOMMENDED_POSTGRES_VERSION};

include!(concat!(env!("OUT_DIR"), "/client_version.rs"));

/// The first key of the transaction-scoped advisory lock that serialises migrations of one
/// schema across processes and runtimes: `BULL` in ASCII. The second key is
/// `hashtext(<schema>)`, so migrating one schema never waits for another. Node.js, Python,
/// Elixir and .NET BullMQ take the same lock.
pub const MIGRATION_ADVISORY_LOCK_KEY: i32 = 0x4255_4c4c;

/// Migrates the schema of `options` on a connection of its own, opened and closed here; the
/// separate step for deployments that connect without [`PostgresOptions::migrate`].
///
/// Returns the schema's version afterwards: [`LATEST_VERSION`], or a newer one that a newer
/// BullMQ applied and that still allows this client.
pub async fn migrate(options: &PostgresOptions) -> Result<i32> {
    options.check()?;
    let connect = options.connect_options()?;
    let mut conn = crate::connection::open::open_first(options, &connect).await?;
    let version = run_migrations(&mut conn, &options.schema, options.skip_version_check).await;
    // A failed close only loses a connection that is being dropped anyway.
    let _ = conn.close().await;
    version
}

/// Applies the pending migrations to `schema` on `conn`, in one transaction under the
/// migration lock (upstream's `runMigrations`); `conn` must be a session of its own, not
/// shared with other work while this runs.
///
/// Either every pending migration and its ledger row commit, or nothing does. Concurrent
/// callers, in this or any process or runtime, wait for the lock; the later ones then find the
/// schema current and change nothing.
///
/// A role without the rights to migrate (SQLSTATE 42501) is refused with
/// [`PostgresError::MigrationNotPermitted`], which says which role should run it.
pub(crate) async fn run_migrations(
    conn: &mut PgConnection,
    schema: &SchemaName,
    skip_version_check: bool,
) -> Result<i32> {
    apply_pending(conn, schema, skip_version_check)
        .await
        .map_err(|err| not_permitted(err, schema))
}

/// A refusal for lack of privilege as [`PostgresError::MigrationNotPermitted`]; other errors
/// as they are.
fn not_permitted(err: bullmq_core::Error, schema: &SchemaName) -> bullmq_core::Error {
    let refusal = match PostgresError::from_error(&err) {
        Some(PostgresError::Query {
            source: sqlx::Error::Database(db),
            ..
        }) if db.code().as_deref() == Some("42501") => db.message().to_owned(),
        _ => return err,
    };
    bullmq_core::Error::backend(PostgresError::MigrationNotPermitted {
        schema: schema.as_str().to_owned(),
        refusal,
    })
}

async fn apply_pending(
    conn: &mut PgConnection,
    schema: &SchemaName,
    skip_version_check: bool,
) -> Result<i32> {
    // Before the transaction, so an old server fails clearly rather than midway through DDL.
    if !skip_version_check {
        check_server(conn).await?;
    }
    let mut tx = conn.begin().await.map_err(wrap("begin the migration"))?;
    sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
        .persistent(false)
        .bind(MIGRATION_ADVISORY_LOCK_KEY)
        .bind(schema.as_str())
        .execute(&mut *tx)
        .await
        .map_err(wrap("take the migration lock"))?;
    let quoted = schema.quoted();
    // Only when missing: `CREATE SCHEMA IF NOT EXISTS` needs `CREATE` on the database even
    // when the schema exists, which the owner of a schema made for it need not have.
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
            .persistent(false)
            .bind(schema.as_str())
            .fetch_one(&mut *tx)
            .await
            .map_err(wrap("look for the schema"))?;
    if !exists {
        execute_script(&mut tx, &format!("CREATE SCHEMA IF NOT EXISTS {quoted}"))
            .await
            .map_err(wrap("create the schema"))?;
    }
    // Until the transaction ends: the migrations name no schema, and their functions capture
    // this `search_path` (`SET search_path FROM CURRENT`).
    execute_script(&mut tx, &format!("SET LOCAL search_path TO {quoted}"))
        .await
        .map_err(wrap("set the migration search_path"))?;
    ledger::ensure(&mut tx, CLIENT_MAJOR_VERSION).await?;
    let current = ledger::current_version(&mut tx).await?;
    let minimum_client = ledger::minimum_client_version(&mut tx, CLIENT_MAJOR_VERSION).await?;
    if minimum_client > CLIENT_MAJOR_VERSION {
        // Dropping `tx` rolls back, as upstream's ROLLBACK does.
        return Err(version_mismatch(schema, minimum_client));
    }
    for migration in ALL.iter().filter(|m| m.version > current) {
        ledger::apply(&mut tx, migration).await?;
    }
    tx.commit().await.map_err(wrap("commit the migration"))?;
    Ok(current.max(LATEST_VERSION))
}

/// Checks, with one read and no lock or DDL, that `schema` is ready for this client (the
/// check upstream's `assertSchemaCompatibility` runs when it connects without migrating), and
/// returns its version.
///
/// Fails with [`PostgresError::SchemaMigrationRequired`] when the schema has no ledger or is
/// behind [`LATEST_VERSION`], [`PostgresError::SchemaVersionMismatch`] when its migrations
/// need a newer client, and [`PostgresError::UnsupportedPostgresVersion`] on a server older
/// than 13 unless `skip_version_check`.
pub(crate) async fn check_schema(
    conn: &mut PgConnection,
    schema: &SchemaName,
    skip_version_check: bool,
) -> Result<i32> {
    // `to_jsonb(migration)` reads `min_client_version` from a ledger that predates the column
    // as well (it is then absent, hence NULL), without a second query.
    let sql = format!(
        "SELECT COALESCE(MAX(version), 0)::int AS version,
                COALESCE(MAX((to_jsonb(migration)->>'min_client_version')::int), $1)::int
                  AS min_client_version,
                current_setting('server_version_num') AS server_version_num,
                current_setting('server_version') AS server_version
           FROM {}.migration",
        schema.quoted()
    );
    let row: (i32, i32, String, String) = match sqlx::query_as(&sql)
        .persistent(false)
        .bind(CLIENT_MAJOR_VERSION)
        .fetch_one(&mut *conn)
        .await
    {
        Ok(row) => row,
        Err(err) if is_undefined_table(&err) => return Err(migration_required(schema, 0)),
        Err(err) => return Err(wrap("read the migration ledger")(err)),
    };
    let (version, minimum_client, version_num, reported) = row;
    if !skip_version_check {
        server_version::check_server_version(&version_num, &reported)
            .map_err(bullmq_core::Error::backend)?;
    }
    if minimum_client > CLIENT_MAJOR_VERSION {
        return Err(version_mismatch(schema, minimum_client));
    }
    if version < LATEST_VERSION {
        return Err(migration_required(schema, version));
    }
    Ok(version)
}

/// Runs `sql`, any number of statements without parameters, with the simple query protocol
/// (as node-postgres runs a query without parameters).
///
/// Through `Executor::execute`, whose boxed future is `Send` for every lifetime: `RawSql`'s own
/// generic `async fn execute` is not provably so, which would make `migrate` impossible to
/// `tokio::spawn`.
pub(crate) async fn execute_script(conn: &mut PgConnection, sql: &str) -> sqlx::Result<()> {
    sqlx::Executor::execute(conn, sqlx::raw_sql(sql)).await?;
    Ok(())
}

/// Runs the server version check on `conn`.
async fn check_server(conn: &mut PgConnection) -> Result<()> {
    let (version_num, reported): (String, String) = sqlx::query_as(
        "SELECT current_setting('server_version_num') AS num, \
                current_setting('server_version') AS ver",
    )
    .persistent(false)
    .fetch_one(&mut *conn)
    .await
    .map_err(wrap("read the server version"))?;
    server_version::check_server_version(&version_num, &reported)
        .map_err(bullmq_core::Error::backend)
}

fn migration_required(schema: &SchemaName, current_version: i32) -> bullmq_core::Error {
    bullmq_core::Error::backend(PostgresError::SchemaMigrationRequired {
        schema: schema.as_str().to_owned(),
        current_version,
        required_version: LATEST_VERSION,
    })
}

fn version_mismatch(schema: &SchemaName, minimum_client_version: i32) -> bullmq_core::Error {
    bullmq_core::Error::backend(PostgresError::SchemaVersionMismatch {
        schema: schema.as_str().to_owned(),
        minimum_client_version,
        client_version: CLIENT_MAJOR_VERSION,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_the_pinned_major_and_allowed_by_every_embedded_migration() {
        assert_eq!(UPSTREAM_VERSION, "6.7.6");
        assert_eq!(CLIENT_MAJOR_VERSION, 6);
        // Otherwise this client would refuse the schema it just migrated.
        for migration in ALL {
            assert!(
                migration.min_client_version <= CLIENT_MAJOR_VERSION,
                "{}",
                migration.name
            );
        }
        assert_eq!(ALL.last().map(|m| m.version), Some(LATEST_VERSION));
    }

    #[test]
    fn the_lock_key_spells_bull() {
        assert_eq!(MIGRATION_ADVISORY_LOCK_KEY.to_be_bytes(), *b"BULL");
    }
}
