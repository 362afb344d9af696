//! The migration runner against a real PostgreSQL: what it writes, when it refuses, and that
//! concurrent runs are serialised by upstream's advisory lock.

mod support;

use std::time::Duration;

use bullmq_core::BackendErrorKind;
use bullmq_postgres::__private::sql::migrations::LATEST_VERSION;
use bullmq_postgres::sqlx::{self, Connection as _};
use bullmq_postgres::{__private::CLIENT_MAJOR_VERSION, MIGRATION_ADVISORY_LOCK_KEY};
use bullmq_postgres::{PostgresConnection, PostgresError, migrate};
use support::{TestSchema, catalog, execute, expected_ledger, ledger, ledger_transactions};

fn postgres_error(err: &bullmq_core::Error) -> &PostgresError {
    PostgresError::from_error(err).unwrap_or_else(|| panic!("not a PostgreSQL error: {err:?}"))
}

/// Connecting to `schema` as it stands (no migrating) is refused, as a schema problem
/// (`why`): the error.
async fn refused(schema: &TestSchema, why: &str) -> bullmq_core::Error {
    let err = PostgresConnection::connect(&schema.options())
        .await
        .expect_err(why);
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Schema), "{why}");
    err
}

#[tokio::test]
async fn connecting_with_migrate_builds_the_schema_and_upstreams_ledger() {
    let schema = TestSchema::new("mig_fresh");
    let conn = schema.connect_migrated().await;
    assert_eq!(ledger(schema.name()).await, expected_ledger());
    assert_eq!(
        ledger_transactions(schema.name()).await,
        1,
        "every migration commits in one transaction"
    );
    assert_eq!(
        conn.schema_version().await.expect("version"),
        LATEST_VERSION
    );
    let objects = catalog(schema.name()).await;
    let functions = objects
        .iter()
        .filter(|o| o.starts_with("function "))
        .count();
    assert!(functions >= 52, "{functions} functions");
    for table in [
        "meta",
        "job",
        "job_log",
        "job_dependency",
        "event",
        "migration",
    ] {
        assert!(
            objects.contains(&format!("relation {table} r")),
            "table {table} missing"
        );
    }
    // The functions captured the schema as their search_path.
    assert!(
        objects
            .iter()
            .any(|o| o.starts_with("function add_job(") && o.ends_with("search_path=<schema>")),
        "add_job does not pin the schema"
    );
    conn.close().await;
}

#[tokio::test]
async fn migrating_again_changes_nothing() {
    let schema = TestSchema::new("mig_again");
    let options = schema.options();
    assert_eq!(migrate(&options).await.expect("first"), LATEST_VERSION);
    let before = catalog(schema.name()).await;
    assert_eq!(migrate(&options).await.expect("second"), LATEST_VERSION);
    let conn = PostgresConnection::connect(&options.clone().migrate(true))
        .await
        .expect("third, while connecting");
    assert_eq!(
        conn.migrate().await.expect("fourth, on the pool"),
        LATEST_VERSION
    );
    assert_eq!(ledger(schema.name()).await, expected_ledger());
    assert_eq!(ledger_transactions(schema.name()).await, 1);
    assert_eq!(catalog(schema.name()).await, before);
    conn.close().await;
}

#[tokio::test]
async fn concurrent_migrations_are_serialised_by_the_lock() {
    let schema = TestSchema::new("mig_race");
    let runs: Vec<_> = (0..6)
        .map(|_| {
            let options = schema.options();
            tokio::spawn(async move { migrate(&options).await })
        })
        .collect();
    for run in runs {
        let version = run
            .await
            .expect("task")
            .expect("every concurrent run succeeds");
        assert_eq!(version, LATEST_VERSION);
    }
    assert_eq!(ledger(schema.name()).await, expected_ledger());
    assert_eq!(ledger_transactions(schema.name()).await, 1, "applied once");
}

#[tokio::test]
async fn migration_waits_for_upstreams_advisory_lock_of_its_schema_only() {
    let schema = TestSchema::new("mig_lock");
    let mut holder = support::admin().await;
    let mut tx = holder.begin().await.expect("begin");
    // Another schema's lock does not hold this one up.
    support::lock_migrations(&mut tx, &format!("{}_other", schema.as_str())).await;
    let version = tokio::time::timeout(Duration::from_secs(20), migrate(&schema.options()))
        .await
        .expect("not blocked by another schema's lock")
        .expect("migrated");
    assert_eq!(version, LATEST_VERSION);

    // The lock Node.js takes, on the same keys: the migration must wait for it. (Upstream's
    // comment beside the constant says 1112493644; the value its code passes is 0x42554c4c.)
    assert_eq!(MIGRATION_ADVISORY_LOCK_KEY, 1_112_886_348);
    support::lock_migrations(&mut tx, schema.as_str()).await;
    let options = schema.options();
    let waiting = tokio::spawn(async move { migrate(&options).await });
    // Fixed wait: the migration must still be blocked on the lock after this long (an
    // absence, which no condition can announce).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "migration ran while the lock was held"
    );
    let waiters: i64 = support::migration_lock_waiters(&mut tx, schema.as_str()).await;
    assert_eq!(
        waiters, 1,
        "the migration waits on (0x42554c4c, hashtext(schema))"
    );
    tx.rollback().await.expect("release");
    let version = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("runs once the lock is released")
        .expect("task")
        .expect("migrated");
    assert_eq!(version, LATEST_VERSION);
    let _ = holder.close().await;
}

#[tokio::test]
async fn connecting_without_migrate_refuses_a_fresh_schema_and_creates_nothing() {
    let schema = TestSchema::new("mig_needed");
    let err = refused(&schema, "a fresh schema is not ready").await;
    match postgres_error(&err) {
        PostgresError::SchemaMigrationRequired {
            schema: name,
            current_version: 0,
            required_version,
        } => {
            assert_eq!(name, schema.as_str());
            assert_eq!(*required_version, LATEST_VERSION);
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(err.to_string().contains("migrate"), "{err}");
    assert!(
        !support::schema_exists(schema.as_str()).await,
        "no DDL without migrate"
    );

    // The separate step makes it ready.
    assert_eq!(
        migrate(&schema.options()).await.expect("migrate"),
        LATEST_VERSION
    );
    let conn = schema.connect("ready now").await;
    assert_eq!(
        conn.schema_version().await.expect("version"),
        LATEST_VERSION
    );
    conn.close().await;
}

#[tokio::test]
async fn a_schema_behind_the_embedded_sql_is_refused_and_a_failed_migration_leaves_nothing() {
    let schema = TestSchema::new("mig_behind");
    migrate(&schema.options()).await.expect("migrate");
    let quoted = schema.name().quoted();
    // As if a client older than ours had migrated it: its ledger stops at 5.
    execute(&format!("DELETE FROM {quoted}.migration WHERE version > 5")).await;
    let err = refused(&schema, "behind").await;
    assert!(
        matches!(
            postgres_error(&err),
            PostgresError::SchemaMigrationRequired {
                current_version: 5,
                ..
            }
        ),
        "{err:?}"
    );
    // Re-applying 6.. fails partway (their objects exist already); the transaction takes
    // every change back, ledger included.
    let before = catalog(schema.name()).await;
    let err = migrate(&schema.options())
        .await
        .expect_err("0009 creates an index that exists");
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Server), "{err}");
    assert_eq!(ledger(schema.name()).await, expected_ledger()[..5].to_vec());
    assert_eq!(catalog(schema.name()).await, before, "nothing half-applied");
}

#[tokio::test]
async fn a_schema_needing_a_newer_client_is_refused() {
    let schema = TestSchema::new("mig_newer");
    migrate(&schema.options()).await.expect("migrate");
    let quoted = schema.name().quoted();
    let future = LATEST_VERSION + 1;
    let newer_major = CLIENT_MAJOR_VERSION + 1;
    execute(&format!(
        "INSERT INTO {quoted}.migration (version, name, min_client_version) \
         VALUES ({future}, 'future_needs_newer_client', {newer_major})"
    ))
    .await;
    let rows = ledger(schema.name()).await;

    let err = refused(&schema, "too new for us").await;
    match postgres_error(&err) {
        PostgresError::SchemaVersionMismatch {
            minimum_client_version,
            client_version,
            ..
        } => {
            assert_eq!(*minimum_client_version, newer_major);
            assert_eq!(*client_version, CLIENT_MAJOR_VERSION);
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(err.to_string().contains("Upgrade bullmq"), "{err}");
    let err = migrate(&schema.options())
        .await
        .expect_err("nor migrates it");
    assert!(
        matches!(
            postgres_error(&err),
            PostgresError::SchemaVersionMismatch { .. }
        ),
        "{err:?}"
    );
    assert_eq!(ledger(schema.name()).await, rows, "ledger untouched");
}

#[tokio::test]
async fn a_newer_schema_that_still_allows_this_client_is_accepted() {
    let schema = TestSchema::new("mig_newer_ok");
    migrate(&schema.options()).await.expect("migrate");
    let future = LATEST_VERSION + 1;
    execute(&format!(
        "INSERT INTO {}.migration (version, name, min_client_version) \
         VALUES ({future}, 'future_compatible', {CLIENT_MAJOR_VERSION})",
        schema.name().quoted()
    ))
    .await;
    let conn = schema.connect("compatible").await;
    assert_eq!(conn.schema_version().await.expect("version"), future);
    assert_eq!(conn.migrate().await.expect("nothing to do"), future);
    assert_eq!(
        ledger(schema.name()).await.len(),
        expected_ledger().len() + 1
    );
    conn.close().await;
}

#[tokio::test]
async fn a_ledger_from_before_min_client_version_is_read_and_upgraded() {
    let schema = TestSchema::new("mig_oldledger");
    migrate(&schema.options()).await.expect("migrate");
    execute(&format!(
        "ALTER TABLE {}.migration DROP COLUMN min_client_version",
        schema.name().quoted()
    ))
    .await;
    let conn = schema
        .connect("the check reads a ledger without the column")
        .await;
    assert_eq!(conn.migrate().await.expect("migrate"), LATEST_VERSION);
    // The column is back, NOT NULL, each row at this client's major (all 6 upstream too).
    assert_eq!(ledger(schema.name()).await, expected_ledger());
    let not_null: bool = {
        let mut admin = support::admin().await;
        sqlx::query_scalar(
            "SELECT attnotnull FROM pg_attribute
              WHERE attrelid = format('%I.migration', $1::text)::regclass
                AND attname = 'min_client_version'",
        )
        .bind(schema.as_str())
        .fetch_one(&mut admin)
        .await
        .expect("read the column")
    };
    assert!(not_null);
    conn.close().await;
}

#[tokio::test]
async fn quoted_schema_names_keep_their_case_and_dollar() {
    let schema = TestSchema::new("Mixed$Case");
    let conn = schema.connect_migrated().await;
    assert!(support::schema_exists(schema.as_str()).await);
    assert!(
        !support::schema_exists(&schema.as_str().to_lowercase()).await,
        "the name was folded to lower case"
    );
    assert_eq!(ledger(schema.name()).await, expected_ledger());
    conn.close().await;
}
