//! `doctor`: silent on a healthy store, and each planted problem found with its fix: an
//! eviction policy and a Redis ACL user without a needed command (on a private
//! redis-server), a prefix without a hash tag on the test Cluster, an old schema, a schema
//! that needs a newer client, and a PostgreSQL role without grants.

use bullmq::postgres::sqlx;
use bullmq_test_support::PrivateRedis;
use bullmq_test_support::{database_url, unique_prefix};
use serde_json::Value;

use crate::support::{Store, bullmq, cluster_url};

/// The check named `name` of a `doctor -o json` document (the first, when several).
fn check<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["check"] == name))
        .unwrap_or_else(|| panic!("no check {name:?} in {doc}"))
}

/// The names of the checks that found a problem.
fn problems(doc: &Value) -> Vec<&str> {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "problem")
        .map(|c| c["check"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_nothing_wrong_on_a_healthy_store() {
    for store in Store::both().await {
        // A queue written by this client, so that its version is compared too.
        store
            .queue("mail")
            .await
            .add(
                "welcome",
                &serde_json::json!({}),
                bullmq::JobOptions::default(),
            )
            .await
            .unwrap();
        let out = store.run(&["doctor", "-o", "json"]).expect(0);
        let doc = out.json();
        assert_eq!(doc["problems"], 0, "{doc}");
        assert!(problems(&doc).is_empty(), "{doc}");
        let names: Vec<&str> = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["check"].as_str().unwrap())
            .collect();
        for c in doc["checks"].as_array().unwrap() {
            assert!(
                ["ok", "note"].contains(&c["status"].as_str().unwrap()),
                "{c}"
            );
            assert!(c["found"].as_str().is_some_and(|f| !f.is_empty()), "{c}");
            assert_eq!(c["fix"].is_null(), c["status"] == "ok", "{c}");
        }
        match store.kind {
            crate::support::Kind::Redis => {
                assert_eq!(doc["store"], "redis");
                assert_eq!(
                    names,
                    [
                        "server",
                        "eviction policy",
                        "memory",
                        "persistence",
                        "permissions",
                        "workers listing",
                        "queue versions",
                        "clock"
                    ]
                );
                let versions = check(&doc, "queue versions");
                assert_eq!(versions["status"], "ok");
                assert!(
                    versions["found"]
                        .as_str()
                        .unwrap()
                        .starts_with("1 queue(s)"),
                    "{versions}"
                );
            }
            crate::support::Kind::Postgres => {
                assert_eq!(doc["store"], "postgres");
                assert_eq!(
                    names,
                    ["server", "schema", "permissions", "persistence", "clock"]
                );
                assert!(
                    check(&doc, "schema")["found"]
                        .as_str()
                        .unwrap()
                        .contains("at version"),
                    "{doc}"
                );
            }
        }
        assert_eq!(check(&doc, "clock")["status"], "ok");
        let text = store.run(&["doctor"]).expect(0);
        assert!(text.stdout.ends_with("nothing is wrong\n"), "{text:?}");

        if store.kind == crate::support::Kind::Redis {
            // A queue last written by another major version.
            let client = redis::Client::open(store.url.as_str()).unwrap();
            let mut con = client.get_multiplexed_async_connection().await.unwrap();
            let meta = format!("{}:mail:meta", store.ns);
            let _: i64 = redis::cmd("HSET")
                .arg(&[meta.as_str(), "version", "bullmq:5.1.0"])
                .query_async(&mut con)
                .await
                .unwrap();
            let doc = store.run(&["doctor", "-o", "json"]).expect(1).json();
            assert_eq!(problems(&doc), ["queue versions"], "{doc}");
            assert_eq!(
                check(&doc, "queue versions")["found"],
                "written by another major version: mail (bullmq:5.1.0)"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_an_eviction_policy_and_a_missing_acl_permission() {
    let server = tokio::task::spawn_blocking(|| {
        PrivateRedis::start_with(|port, _| {
            [
                "--port",
                &port.to_string(),
                "--maxmemory-policy",
                "allkeys-lru",
            ]
            .map(str::to_owned)
            .to_vec()
        })
    })
    .await
    .unwrap();
    let mut admin = server.admin().await;
    let () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "limited",
            "on",
            ">pw",
            "~app:*",
            "+@all",
            "-zadd",
            "-client|list",
        ])
        .query_async(&mut admin)
        .await
        .unwrap();
    let url = format!("redis://limited:pw@127.0.0.1:{}", server.port);
    let out = bullmq(&["--url", &url, "--prefix", "app", "doctor", "-o", "json"]).expect(1);
    assert!(out.stderr.contains("doctor found 2 problems"), "{out:?}");
    let doc = out.json();
    assert_eq!(doc["problems"], 2, "{doc}");
    assert_eq!(problems(&doc), ["eviction policy", "permissions"]);
    let eviction = check(&doc, "eviction policy");
    assert!(
        eviction["found"].as_str().unwrap().contains("allkeys-lru"),
        "{eviction}"
    );
    assert!(
        eviction["fix"].as_str().unwrap().contains("noeviction"),
        "{eviction}"
    );
    let permissions = check(&doc, "permissions");
    assert_eq!(
        permissions["found"], "limited may not run zadd on keys app:*",
        "{permissions}"
    );
    assert!(
        permissions["fix"]
            .as_str()
            .unwrap()
            .contains("ACL SETUSER limited +zadd"),
        "{permissions}"
    );
    assert_eq!(check(&doc, "workers listing")["status"], "note");
    // The password is in no output.
    assert!(
        !out.stdout.contains(":pw@") && !out.stderr.contains(":pw@"),
        "{out:?}"
    );

    // Outside its keys, the user may not even run the probe.
    let out = bullmq(&["--url", &url, "--prefix", "other", "doctor", "-o", "json"]).expect(1);
    let permissions = check(&out.json(), "permissions").clone();
    assert_eq!(permissions["status"], "problem", "{permissions}");
    assert!(
        permissions["fix"].as_str().unwrap().contains("~other:*"),
        "{permissions}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_a_cluster_prefix_without_a_hash_tag() {
    let url = cluster_url().await;
    let bare = unique_prefix();
    let out = bullmq(&["--url", &url, "--prefix", &bare, "doctor", "-o", "json"]).expect(1);
    let doc = out.json();
    assert_eq!(problems(&doc), ["cluster hash tag"], "{doc}");
    let tag = check(&doc, "cluster hash tag");
    assert!(
        tag["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("'{{{bare}}}'")),
        "{tag}"
    );

    let tagged = format!("{{{bare}}}");
    let out = bullmq(&["--url", &url, "--prefix", &tagged, "doctor", "-o", "json"]).expect(0);
    assert_eq!(check(&out.json(), "cluster hash tag")["status"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_an_old_schema_and_one_that_needs_a_newer_client() {
    let store = Store::postgres().await;
    let mut admin = bullmq_test_support::postgres::admin().await;
    let ledger = format!("\"{}\".migration", store.ns);
    sqlx::query(&format!("DELETE FROM {ledger} WHERE version > 5"))
        .execute(&mut admin)
        .await
        .unwrap();
    let doc = store.run(&["doctor", "-o", "json"]).expect(1).json();
    assert_eq!(problems(&doc), ["schema"], "{doc}");
    let schema = check(&doc, "schema");
    assert!(
        schema["found"].as_str().unwrap().starts_with(&format!(
            "schema {:?} at version 5, this client needs",
            store.ns
        )),
        "{schema}"
    );
    assert!(
        schema["fix"].as_str().unwrap().contains("migrate"),
        "{schema}"
    );

    sqlx::query(&format!("UPDATE {ledger} SET min_client_version = 99"))
        .execute(&mut admin)
        .await
        .unwrap();
    let doc = store.run(&["doctor", "-o", "json"]).expect(1).json();
    let schema = check(&doc, "schema");
    assert!(
        schema["found"]
            .as_str()
            .unwrap()
            .contains("needs BullMQ 99 or newer"),
        "{schema}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_finds_a_postgres_role_without_grants() {
    let store = Store::postgres().await;
    let role = format!("doctor_{}", unique_prefix().replace(['-', ':'], "_")).to_lowercase();
    let mut admin = bullmq_test_support::postgres::admin().await;
    sqlx::query(&format!("CREATE ROLE \"{role}\" LOGIN"))
        .execute(&mut admin)
        .await
        .unwrap();
    let url = database_url().replacen("postgres@", &format!("{role}@"), 1);
    let out = bullmq(&["--url", &url, "--schema", &store.ns, "doctor", "-o", "json"]);
    sqlx::query(&format!("DROP ROLE \"{role}\""))
        .execute(&mut admin)
        .await
        .unwrap();
    let doc = out.expect(1).json();
    let permissions = check(&doc, "permissions");
    assert_eq!(permissions["status"], "problem", "{doc}");
    let found = permissions["found"].as_str().unwrap();
    assert!(
        found.starts_with(&format!("role {role} lacks USAGE on the schema")),
        "{found}"
    );
    assert!(
        permissions["fix"].as_str().unwrap().contains(&format!(
            "GRANT USAGE, CREATE ON SCHEMA \"{}\" TO \"{role}\"",
            store.ns
        )),
        "{permissions}"
    );
}
