//! The pool and dedicated connections against a real PostgreSQL: the schema pinned as
//! `search_path`, `application_name` as upstream's discovery expects, clear errors.

mod support;

use std::time::{Duration, Instant};

use bullmq_core::BackendErrorKind;
use bullmq_postgres::__private::client_name;
use bullmq_postgres::__private::sql::commands;
use bullmq_postgres::__private::sql::migrations::LATEST_VERSION;
use bullmq_postgres::sqlx::{self, Connection as _};
use bullmq_postgres::{
    ConnectFailure, PostgresConnection, PostgresError, PostgresOptions, SchemaName, migrate,
};
use support::TestSchema;

#[tokio::test]
async fn pooled_connections_run_in_the_schema_and_stay_unnamed() {
    let schema = TestSchema::new("conn_pool");
    let conn = schema.connect_migrated().await;
    let mut pooled = conn.pool().acquire().await.expect("a pooled connection");
    let (current_schema, application_name): (String, String) =
        sqlx::query_as("SELECT current_schema(), current_setting('application_name')")
            .fetch_one(&mut *pooled)
            .await
            .expect("read the session");
    assert_eq!(current_schema, schema.as_str());
    assert_eq!(
        application_name,
        std::env::var("PGAPPNAME").unwrap_or_default(),
        "pooled connections must not look like workers to get_client_list"
    );
    // Unqualified names resolve into the schema, as upstream's command files expect.
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM migration")
        .fetch_one(&mut *pooled)
        .await
        .expect("the ledger, unqualified");
    assert_eq!(applied, i64::from(LATEST_VERSION));
    drop(pooled);
    conn.close().await;
}

#[tokio::test]
async fn a_dedicated_connection_is_named_for_discovery() {
    let schema = TestSchema::new("conn_named");
    let conn = schema.connect_migrated().await;
    let queue = format!("q-{}", uuid::Uuid::new_v4().simple());
    let name = client_name::worker(&queue, Some("w1"));
    let mut dedicated = conn
        .open_dedicated(Some(&name))
        .await
        .expect("dedicated connection");
    let in_schema: String = sqlx::query_scalar("SELECT current_schema()")
        .fetch_one(&mut dedicated)
        .await
        .expect("read the session");
    assert_eq!(in_schema, schema.as_str());

    // Upstream's own discovery query, verbatim, on the pool.
    let listed: Vec<String> = sqlx::query_scalar(commands::GET_CLIENT_LIST.text)
        .fetch_all(conn.pool())
        .await
        .expect("get_client_list");
    assert_eq!(
        listed
            .iter()
            .filter(|n| **n == format!("{queue}:w:w1"))
            .count(),
        1,
        "{listed:?}"
    );
    dedicated.close().await.expect("close");
    conn.close().await;
}

#[tokio::test]
async fn an_unreachable_server_says_what_to_do() {
    let options = PostgresOptions::new("postgres://bullmq:hunter2@127.0.0.1:1/test")
        .schema(SchemaName::new("unused").expect("valid"))
        .connect_timeout(Duration::from_secs(5));
    let started = Instant::now();
    for err in [
        PostgresConnection::connect(&options)
            .await
            .expect_err("nothing listens on port 1"),
        migrate(&options).await.expect_err("nor can it migrate"),
    ] {
        assert_eq!(err.backend_kind(), Some(BackendErrorKind::Connection));
        assert!(
            matches!(
                PostgresError::from_error(&err),
                Some(PostgresError::Unreachable { .. })
            ),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains("postgres://bullmq@127.0.0.1:1/test"),
            "{message}"
        );
        assert!(message.contains("Is PostgreSQL running"), "{message}");
        assert!(message.contains("apt-get install postgresql"), "{message}");
        assert!(
            !message.contains("hunter2"),
            "the password leaked: {message}"
        );
    }
    // Refused at once: the pool's retry-until-timeout is not in the way.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_missing_database_is_told_apart_from_a_stopped_server() {
    let mut url = support::database_url();
    let slash = url.rfind('/').expect("a database in DATABASE_URL");
    url.truncate(slash);
    url.push_str("/bullmq_no_such_database");
    let err = PostgresConnection::connect(&PostgresOptions::new(url))
        .await
        .expect_err("no such database");
    let message = err.to_string();
    assert!(message.contains("does not exist"), "{message}");
    assert!(message.contains("unknown database"), "{message}");
    assert!(message.contains("create it, or fix its name"), "{message}");
    assert_eq!(
        PostgresError::from_error(&err).and_then(PostgresError::connect_failure),
        Some(ConnectFailure::UnknownDatabase)
    );
}

#[test]
fn bad_schema_names_are_refused_before_anything_runs() {
    for name in [
        "",
        "9lives",
        "my-jobs",
        "jobs;DROP SCHEMA public",
        "a\"b",
        &"s".repeat(64),
    ] {
        let err: bullmq_core::Error = SchemaName::new(name).expect_err(name).into();
        assert!(
            matches!(err, bullmq_core::Error::Invalid(_)),
            "{name:?}: {err:?}"
        );
        assert!(err.to_string().contains("schema"), "{err}");
    }
    let longest = SchemaName::new("s".repeat(63)).expect("63 characters are allowed");
    assert_eq!(longest.as_str().len(), 63);
}

#[tokio::test]
async fn invalid_pool_settings_are_refused_before_connecting() {
    let schema = TestSchema::new("conn_invalid");
    let err = PostgresConnection::connect(&schema.options().max_connections(0))
        .await
        .expect_err("no pool");
    assert!(matches!(err, bullmq_core::Error::Invalid(_)), "{err:?}");
    assert!(!support::schema_exists(schema.as_str()).await);
}

#[tokio::test]
async fn the_pool_serves_concurrent_callers_beyond_its_size() {
    let schema = TestSchema::new("conn_size");
    let conn = PostgresConnection::connect(&schema.options().migrate(true).max_connections(2))
        .await
        .expect("connect");
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let conn = conn.clone();
            tokio::spawn(async move {
                sqlx::query_scalar::<_, i32>("SELECT 1 FROM pg_sleep(0.05)")
                    .fetch_one(conn.pool())
                    .await
            })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.expect("task").expect("query"), 1);
    }
    assert!(conn.pool().size() <= 2);
    conn.close().await;
}
