//! Node.js BullMQ 6.7.6 (`createPostgresBackend`, pinned `pg`) and this crate on one schema:
//! each accepts what the other migrated, both build the very same schema, and both take the
//! same migration lock.

mod support;

use std::time::Duration;

use bullmq_postgres::__private::CLIENT_MAJOR_VERSION;
use bullmq_postgres::__private::sql::migrations::LATEST_VERSION;
use bullmq_postgres::sqlx::{self, Connection as _};
use bullmq_postgres::{PostgresConnection, migrate};
use serde_json::json;
use support::{TestSchema, catalog, expected_ledger, ledger, ledger_transactions, node_queue_op};

fn node_env(schema: &TestSchema, op: &str, migrate: bool) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("SCHEMA", schema.as_str().to_owned()),
        ("QUEUE", "interop".to_owned()),
        ("OP", op.to_owned()),
    ];
    if migrate {
        env.push(("MIGRATE", "1".to_owned()));
    }
    env
}

#[tokio::test]
async fn a_schema_migrated_by_node_is_accepted_and_is_the_schema_rust_builds() {
    let by_node = TestSchema::new("node_migrated");
    let reply = node_queue_op(node_env(&by_node, "ready", true)).await;
    assert_eq!(reply, json!({"ok": true, "id": null}));

    let conn = by_node
        .connect("Rust accepts the schema Node migrated")
        .await;
    assert_eq!(
        conn.schema_version().await.expect("version"),
        LATEST_VERSION
    );
    assert_eq!(conn.migrate().await.expect("nothing to do"), LATEST_VERSION);
    assert_eq!(ledger(by_node.name()).await, expected_ledger());
    assert_eq!(
        ledger_transactions(by_node.name()).await,
        1,
        "Rust added nothing"
    );
    conn.close().await;

    let by_rust = TestSchema::new("rust_migrated");
    migrate(&by_rust.options()).await.expect("migrate");
    let (node_catalog, rust_catalog) =
        (catalog(by_node.name()).await, catalog(by_rust.name()).await);
    assert!(node_catalog.len() > 100, "{} objects", node_catalog.len());
    assert_eq!(
        node_catalog, rust_catalog,
        "the same tables, indexes and functions"
    );
}

#[tokio::test]
async fn a_schema_migrated_by_rust_takes_jobs_from_node() {
    let schema = TestSchema::new("rust_for_node");
    migrate(&schema.options()).await.expect("migrate");
    let mut env = node_env(&schema, "add", false);
    env.push(("JOB_NAME", "from-node".to_owned()));
    env.push(("JOB_DATA", r#"{"n":1}"#.to_owned()));
    let reply = node_queue_op(env).await;
    assert_eq!(reply, json!({"ok": true, "id": "1"}));

    let conn = schema.connect("connect").await;
    let row: (String, String, String, String) =
        sqlx::query_as("SELECT id, name, state::text, data::text FROM job WHERE queue = 'interop'")
            .fetch_one(conn.pool())
            .await
            .expect("the job Node added");
    assert_eq!(
        row,
        (
            "1".to_owned(),
            "from-node".to_owned(),
            "waiting".to_owned(),
            r#"{"n": 1}"#.to_owned()
        )
    );
    conn.close().await;
}

#[tokio::test]
async fn node_and_rust_refuse_the_same_schemas() {
    let fresh = TestSchema::new("node_fresh");
    let reply = node_queue_op(node_env(&fresh, "ready", false)).await;
    assert_eq!(reply["error"], "SchemaMigrationRequiredError", "{reply}");
    assert!(PostgresConnection::connect(&fresh.options()).await.is_err());

    let newer = TestSchema::new("node_newer");
    migrate(&newer.options()).await.expect("migrate");
    support::execute(&format!(
        "INSERT INTO {}.migration (version, name, min_client_version) VALUES ({}, 'future', {})",
        newer.name().quoted(),
        LATEST_VERSION + 1,
        CLIENT_MAJOR_VERSION + 1
    ))
    .await;
    let reply = node_queue_op(node_env(&newer, "ready", false)).await;
    assert_eq!(reply["error"], "SchemaVersionMismatchError", "{reply}");
    assert!(PostgresConnection::connect(&newer.options()).await.is_err());
}

#[tokio::test]
async fn node_waits_for_the_migration_lock_rust_takes() {
    let schema = TestSchema::new("node_lock");
    let mut holder = support::admin().await;
    let mut tx = holder.begin().await.expect("begin");
    support::lock_migrations(&mut tx, schema.as_str()).await;

    let node = tokio::spawn(node_queue_op(node_env(&schema, "ready", true)));
    // Node queues up behind exactly this lock (its start-up takes a moment).
    let mut waiting = false;
    for _ in 0..100 {
        let waiters: i64 = support::migration_lock_waiters(&mut tx, schema.as_str()).await;
        if waiters == 1 {
            waiting = true;
            break;
        }
        assert!(
            !node.is_finished(),
            "Node migrated while Rust held the lock"
        );
        // Poll interval of a loop that names, when it gives up, what is still pending.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        waiting,
        "Node never waited on (0x42554c4c, hashtext(schema))"
    );
    assert!(!node.is_finished());
    tx.rollback().await.expect("release");
    let reply = node.await.expect("node task");
    assert_eq!(reply, json!({"ok": true, "id": null}));
    assert_eq!(ledger(schema.name()).await, expected_ledger());
    let _ = holder.close().await;
}
