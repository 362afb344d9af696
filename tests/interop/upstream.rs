//! The Lua scripts and SQL we build from the pinned package are exactly what Node.js BullMQ
//! 6.7.6 loads, as Node itself reports it (`tests/node/upstream-dump.mjs` reads bullmq's own
//! modules), and Redis names our scripts by the SHA1 we claim.

use crate::support;

use std::collections::BTreeMap;

use bullmq_postgres::__private::sql;
use bullmq_redis::__private::scripts;
use serde_json::Value;

fn node_dump() -> Value {
    let out = support::run_node("upstream-dump.mjs", &[]);
    let dump: Value = serde_json::from_str(&out).expect("upstream-dump.mjs prints JSON");
    assert_eq!(
        dump["bullmqVersion"], "6.7.6",
        "tests/node must pin bullmq 6.7.6"
    );
    dump
}

#[test]
fn every_lua_script_is_the_one_node_loads() {
    let dump = node_dump();
    let node = dump["lua"].as_object().expect("lua map");
    assert_eq!(node.len(), 64);
    assert_eq!(scripts::ALL.len(), node.len());
    for script in scripts::ALL {
        let key = format!("{}-{}", script.name, script.num_keys);
        let theirs = node
            .get(&key)
            .unwrap_or_else(|| panic!("Node has no script {key}"));
        assert_eq!(
            theirs["keys"].as_u64(),
            Some(script.num_keys as u64),
            "{key}: keys"
        );
        assert_eq!(theirs["content"].as_str(), Some(script.text), "{key}: text");
        assert_eq!(theirs["sha1"].as_str(), Some(script.sha1), "{key}: sha1");
    }
}

#[test]
fn every_sql_file_is_the_one_node_loads() {
    let dump = node_dump();
    let node_commands = dump["sqlCommands"].as_object().expect("sqlCommands");
    assert_eq!(node_commands.len(), 101);
    let ours: BTreeMap<String, &str> = sql::commands::ALL
        .iter()
        .map(|c| (format!("{}.sql", c.name), c.text))
        .collect();
    assert_eq!(ours.len(), node_commands.len());
    for (file, text) in node_commands {
        assert_eq!(ours.get(file).copied(), text.as_str(), "{file}");
    }

    let node_migrations = dump["sqlMigrations"].as_object().expect("sqlMigrations");
    let ledger = dump["migrations"].as_array().expect("migrations");
    assert_eq!(node_migrations.len(), 11);
    assert_eq!(sql::migrations::ALL.len(), ledger.len());
    for (m, entry) in sql::migrations::ALL.iter().zip(ledger) {
        assert_eq!(entry["version"].as_i64(), Some(i64::from(m.version)));
        assert_eq!(entry["name"].as_str(), Some(m.name));
        assert_eq!(
            entry["minClientVersion"].as_i64(),
            Some(i64::from(m.min_client_version))
        );
        let file = format!("{}.sql", m.name);
        assert_eq!(node_migrations[&file].as_str(), Some(m.text), "{file}");
    }
}

#[tokio::test]
async fn redis_names_each_script_by_our_sha1() {
    let mut con = support::redis().await;
    for script in scripts::ALL {
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(script.text)
            .query_async(&mut con)
            .await
            .expect("SCRIPT LOAD");
        assert_eq!(sha, script.sha1, "{}", script.name);
    }
}
