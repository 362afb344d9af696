//! Helpers of the scheduler's Redis tests: the test Redis, unique prefixes, the pinned Node.js
//! scripts in `tests/node`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// The Redis the tests use: `REDIS_URL`, else the local default.
pub(crate) fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A key prefix no other test uses.
pub(crate) fn unique_prefix() -> String {
    format!("bullmq-sched-test-{}", uuid::Uuid::new_v4().simple())
}

/// Runs `node <args…>` in `tests/node` and parses the JSON it prints.
pub(crate) fn node(args: &[&str], prefix: &str, queue: &str) -> serde_json::Value {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/node");
    let out = Command::new("node")
        .args(args)
        .current_dir(&dir)
        .env("REDIS_URL", redis_url())
        .env("PREFIX", prefix)
        .env("QUEUE", queue)
        .output()
        .expect("node must be installed (and `npm ci --prefix tests/node` done)");
    assert!(
        out.status.success(),
        "node {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON from node")
}

/// Deletes every key under a prefix when dropped.
pub(crate) struct PrefixGuard(pub(crate) String);

impl Drop for PrefixGuard {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(redis_url().as_str()) else {
            return;
        };
        let Ok(mut con) = client.get_connection() else {
            return;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", self.0))
            .query(&mut con)
            .unwrap_or_default();
        for chunk in keys.chunks(500) {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(chunk).query(&mut con);
        }
    }
}
