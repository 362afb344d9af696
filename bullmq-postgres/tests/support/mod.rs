//! Shared helpers of the PostgreSQL tests: the server's URL, a schema of its own per test
//! (dropped afterwards, even when the test fails), and the Node.js helpers.
#![allow(dead_code, unreachable_pub, unused_imports)]

use bullmq_postgres::MIGRATION_ADVISORY_LOCK_KEY;
use bullmq_postgres::SchemaName;
use bullmq_postgres::sqlx::{self, PgConnection};

/// The test server's URL, a connection to it and schemas of a test's own (the workspace's
/// test-support crate).
pub use bullmq_test_support::postgres as server;
pub use bullmq_test_support::{node_dir, run_node};
pub use server::{SchemaGuard, admin, database_url};

/// A schema name no other test uses; the schema is dropped when this is dropped, and a failed
/// drop fails the test.
pub struct TestSchema(SchemaGuard);

impl TestSchema {
    /// A fresh name, `<tag>_<uuid>` (the schema is not created).
    pub fn new(tag: &str) -> Self {
        Self(SchemaGuard::new(tag).strict())
    }

    /// A connection to this schema that migrates it first.
    pub async fn connect_migrated(&self) -> bullmq_postgres::PostgresConnection {
        bullmq_postgres::PostgresConnection::connect(&self.options().migrate(true))
            .await
            .expect("connect and migrate")
    }

    /// A connection to this schema as it stands (no migrating); `ready` says why it must be.
    pub async fn connect(&self, ready: &str) -> bullmq_postgres::PostgresConnection {
        bullmq_postgres::PostgresConnection::connect(&self.options())
            .await
            .expect(ready)
    }
}

/// Takes upstream's migration lock of `schema` in `tx`, as its migrator (and Node.js's) does;
/// held until `tx` ends.
pub async fn lock_migrations(tx: &mut PgConnection, schema: &str) {
    sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
        .bind(MIGRATION_ADVISORY_LOCK_KEY)
        .bind(schema)
        .execute(tx)
        .await
        .expect("take the migration lock");
}

impl std::ops::Deref for TestSchema {
    type Target = SchemaGuard;

    fn deref(&self) -> &SchemaGuard {
        &self.0
    }
}

/// Whether the schema exists.
pub async fn schema_exists(schema: &str) -> bool {
    let mut conn = admin().await;
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
        .bind(schema)
        .fetch_one(&mut conn)
        .await
        .expect("read pg_namespace")
}

/// The ledger rows `(version, name, min_client_version)` in version order.
pub async fn ledger(schema: &SchemaName) -> Vec<(i32, String, i32)> {
    let sql = from_ledger(
        schema,
        "version, name, min_client_version",
        "ORDER BY version",
    );
    sqlx::query_as(&sql)
        .fetch_all(&mut admin().await)
        .await
        .expect("read the ledger")
}

/// `SELECT columns FROM <schema>.migration tail`.
fn from_ledger(schema: &SchemaName, columns: &str, tail: &str) -> String {
    format!("SELECT {columns} FROM {}.migration {tail}", schema.quoted())
}

/// The ledger upstream's migrator writes for the embedded migrations.
pub fn expected_ledger() -> Vec<(i32, String, i32)> {
    bullmq_postgres::__private::sql::migrations::ALL
        .iter()
        .map(|m| (m.version, m.name.to_owned(), m.min_client_version))
        .collect()
}

/// How many distinct `applied_at` values the ledger has (one per migrating transaction).
pub async fn ledger_transactions(schema: &SchemaName) -> i64 {
    let sql = from_ledger(schema, "count(DISTINCT applied_at)", "");
    sqlx::query_scalar(&sql)
        .fetch_one(&mut admin().await)
        .await
        .expect("read the ledger")
}

/// How many sessions wait for the migration lock of `schema` (upstream's advisory lock
/// `(0x42554c4c, hashtext(schema))`, sub-id 2: two 32-bit keys), read on `conn`.
pub async fn migration_lock_waiters(conn: &mut PgConnection, schema: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks
          WHERE locktype = 'advisory' AND NOT granted
            AND classid = $1::oid AND objid = hashtext($2)::oid AND objsubid = 2",
    )
    .bind(MIGRATION_ADVISORY_LOCK_KEY)
    .bind(schema)
    .fetch_one(conn)
    .await
    .expect("read pg_locks")
}

/// Runs a statement on the test server.
pub async fn execute(sql: &str) {
    let mut conn = admin().await;
    sqlx::raw_sql(sql)
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Every object of `schema` as sorted text lines (tables and their columns with types,
/// defaults and nullability; relations by kind; indexes; functions with their arguments, a
/// hash of their body and their settings; enum labels), the schema's own name replaced by
/// `<schema>`: two schemas that the same migrations built print the same.
pub async fn catalog(schema: &SchemaName) -> Vec<String> {
    let mut conn = admin().await;
    let rows: Vec<String> = sqlx::query_scalar(
        "SELECT replace(kind || ' ' || def, $1, '<schema>') FROM (
           SELECT 'column' AS kind,
                  c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                    || ' notnull=' || a.attnotnull || ' default='
                    || coalesce(pg_get_expr(d.adbin, d.adrelid), '') AS def
             FROM pg_attribute a
             JOIN pg_class c ON c.oid = a.attrelid
             JOIN pg_namespace n ON n.oid = c.relnamespace
             LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE n.nspname = $1 AND a.attnum > 0 AND NOT a.attisdropped
              AND c.relkind IN ('r', 'p')
           UNION ALL
           SELECT 'relation', c.relname || ' ' || c.relkind::text
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1
           UNION ALL
           SELECT 'index', indexdef FROM pg_indexes WHERE schemaname = $1
           UNION ALL
           SELECT 'function', p.proname || '(' || pg_get_function_identity_arguments(p.oid)
                    || ') ' || md5(p.prosrc) || ' '
                    || coalesce(array_to_string(p.proconfig, ','), '')
             FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = $1
           UNION ALL
           SELECT 'enum', t.typname || ' '
                    || string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
             FROM pg_type t
             JOIN pg_enum e ON e.enumtypid = t.oid
             JOIN pg_namespace n ON n.oid = t.typnamespace
            WHERE n.nspname = $1
            GROUP BY t.typname
         ) objects ORDER BY 1",
    )
    .bind(schema.as_str())
    .fetch_all(&mut conn)
    .await
    .expect("read the catalog");
    rows
}

/// Runs `tests/node/pg-queue-op.mjs` and parses its JSON line.
pub async fn node_queue_op(env: Vec<(&'static str, String)>) -> serde_json::Value {
    let out = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run_node("pg-queue-op.mjs", &env)
    })
    .await
    .expect("the node helper task");
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("node printed {out:?}: {e}"))
}
