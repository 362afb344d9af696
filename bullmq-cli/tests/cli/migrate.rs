//! `migrate` (PostgreSQL): a dry run lists the pending migrations and changes nothing; a run
//! applies them (the ledger afterwards); a second run finds nothing to do.

use bullmq::postgres::{MIGRATIONS, sqlx};
use bullmq_test_support::database_url;
use bullmq_test_support::postgres::SchemaGuard;

use crate::support::bullmq;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_shows_then_applies_the_pending_migrations() {
    let guard = SchemaGuard::new("climig");
    let url = database_url();
    let run = |rest: &[&str]| {
        let mut args = vec!["--url", url.as_str(), "--schema", guard.as_str()];
        args.extend_from_slice(rest);
        bullmq(&args)
    };
    let latest = MIGRATIONS.last().unwrap().version;
    let mut admin = bullmq_test_support::postgres::admin().await;
    let dry = run(&["migrate", "--dry-run", "-o", "json"])
        .expect(0)
        .json();
    assert_eq!(dry["command"], "migrate");
    assert_eq!(dry["schema"], guard.as_str());
    assert_eq!(
        (&dry["dry_run"], &dry["from_version"], &dry["to_version"]),
        (&true.into(), &0.into(), &0.into())
    );
    assert_eq!(dry["applied"], 0);
    let pending = dry["pending"].as_array().unwrap();
    assert_eq!(pending.len(), MIGRATIONS.len());
    assert_eq!(pending[0]["version"], 1);
    assert_eq!(pending[0]["name"], MIGRATIONS[0].name);
    assert!(pending[0]["min_client_version"].as_i64().is_some());
    assert!(
        !schema_exists(&mut admin, guard.as_str()).await,
        "a dry run creates nothing"
    );

    // Without a terminal to ask on, only --yes goes on; read-only mode refuses.
    let refused = run(&["migrate"]).expect(2);
    assert!(refused.stderr.contains("without --yes"), "{refused:?}");
    run(&["--read-only", "migrate", "-y"]).expect(2);
    run(&["--read-only", "migrate", "--dry-run"]).expect(0);
    assert!(!schema_exists(&mut admin, guard.as_str()).await);

    let done = run(&["migrate", "-y", "-o", "json"]).expect(0).json();
    assert_eq!(
        (&done["from_version"], &done["to_version"]),
        (&0.into(), &latest.into())
    );
    assert_eq!(done["applied"], MIGRATIONS.len());
    let ledger: Vec<i32> = sqlx::query_scalar(&format!(
        "SELECT version FROM \"{}\".migration ORDER BY version",
        guard.as_str()
    ))
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert_eq!(
        ledger,
        MIGRATIONS.iter().map(|m| m.version).collect::<Vec<_>>()
    );

    let again = run(&["migrate", "-y", "-o", "json"]).expect(0).json();
    assert_eq!(again["pending"].as_array().map(Vec::len), Some(0));
    assert_eq!(again["from_version"], latest);
    let text = run(&["migrate"]).expect(0);
    assert!(text.stdout.contains("is up to date"), "{text:?}");
    // The schema works for the library as migrated.
    run(&["doctor", "-o", "json"]).expect(0);
}

#[test]
fn migrate_is_refused_on_redis() {
    let out = bullmq(&["--url", "redis://127.0.0.1:6379", "migrate", "--dry-run"]).expect(2);
    assert!(out.stderr.contains("for PostgreSQL"), "{out:?}");
}

/// Whether schema `name` exists.
async fn schema_exists(admin: &mut sqlx::PgConnection, name: &str) -> bool {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
        .bind(name)
        .fetch_one(admin)
        .await
        .unwrap()
}
