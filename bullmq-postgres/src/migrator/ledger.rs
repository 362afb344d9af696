//! The `migration` table: which migrations a schema has, and the oldest client it allows.
//!
//! Its shape and rows are upstream's (`migrator.ts`), so that Node.js and this crate read and
//! extend one ledger: `version` is the migration's ordinal, `name` its file name without
//! `.sql`, `min_client_version` the oldest BullMQ major that works with the schema it produces.
//! Every statement runs inside the migration transaction, with `search_path` set to the schema.

use sqlx::PgConnection;

use super::execute_script;
use crate::error::wrap;
use crate::sql::Migration;
use bullmq_core::Result;

/// Creates the ledger if the schema has none, and brings one from before
/// `min_client_version` existed up to date, rows without a value counting as `client_major`
/// (as upstream's `ensureLedgerTable` does).
pub(super) async fn ensure(conn: &mut PgConnection, client_major: i32) -> Result<()> {
    // One script, run as one simple query inside the migration transaction; `client_major` is
    // an integer, so formatting it into the text cannot inject anything.
    let script = format!(
        "CREATE TABLE IF NOT EXISTS migration (
           version    integer PRIMARY KEY,
           name       text NOT NULL,
           min_client_version integer NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         );
         ALTER TABLE migration ADD COLUMN IF NOT EXISTS min_client_version integer;
         UPDATE migration SET min_client_version = {client_major} WHERE min_client_version IS NULL;
         ALTER TABLE migration ALTER COLUMN min_client_version SET NOT NULL;"
    );
    execute_script(conn, &script)
        .await
        .map_err(wrap("create the migration ledger"))
}

/// The highest applied version, 0 for an empty ledger.
pub(super) async fn current_version(conn: &mut PgConnection) -> Result<i32> {
    sqlx::query_scalar("SELECT COALESCE(MAX(version), 0)::int AS version FROM migration")
        .persistent(false)
        .fetch_one(&mut *conn)
        .await
        .map_err(wrap("read the schema version"))
}

/// The highest `min_client_version` in the ledger, `client_major` for an empty one.
pub(super) async fn minimum_client_version(
    conn: &mut PgConnection,
    client_major: i32,
) -> Result<i32> {
    sqlx::query_scalar(
        "SELECT COALESCE(MAX(min_client_version), $1)::int AS min_client_version FROM migration",
    )
    .persistent(false)
    .bind(client_major)
    .fetch_one(&mut *conn)
    .await
    .map_err(wrap("read the minimum client version"))
}

/// Runs `migration` verbatim and records it; `applied_at` takes the column default, the
/// transaction's start time, as with upstream.
pub(super) async fn apply(conn: &mut PgConnection, migration: &Migration) -> Result<()> {
    // The simple query protocol, as node-postgres uses for a query without parameters: a
    // migration is many statements, which a prepared statement cannot hold.
    execute_script(conn, migration.text)
        .await
        .map_err(wrap("apply a migration"))?;
    sqlx::query("INSERT INTO migration (version, name, min_client_version) VALUES ($1, $2, $3)")
        .persistent(false)
        .bind(migration.version)
        .bind(migration.name)
        .bind(migration.min_client_version)
        .execute(&mut *conn)
        .await
        .map_err(wrap("record a migration in the ledger"))?;
    Ok(())
}
