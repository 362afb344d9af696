//! Shared helpers for the integration tests: service URLs with clear messages when a service is
//! missing, unique prefixes, and running the pinned Node.js scripts.

#![allow(dead_code, unreachable_pub)]

pub mod corpus;

use std::path::PathBuf;
use std::process::Command;

/// The Redis the tests use: `REDIS_URL`, else the local default.
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A connection to the test Redis, or a panic that says how to get one.
pub async fn redis() -> redis::aio::MultiplexedConnection {
    let url = redis_url();
    let client = redis::Client::open(url.as_str())
        .unwrap_or_else(|e| panic!("REDIS_URL {url:?} is not a valid Redis URL: {e}"));
    client
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "cannot reach Redis at {url} ({e}). Start one (`redis-server --port 6379`) \
             or point REDIS_URL at a server you may write to."
            )
        })
}

/// A key prefix no other test uses.
pub fn unique_prefix() -> String {
    format!("bullmq-test-{}", uuid::Uuid::new_v4().simple())
}

/// The folder of the pinned Node.js helpers.
pub fn node_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("node")
}

/// Runs `node <script>` in `tests/node` with `env`, returning its stdout; panics with what to
/// do when Node.js or the pinned packages are missing, or the script fails.
pub fn run_node(script: &str, env: &[(&str, &str)]) -> String {
    run_node_args(&[script], env)
}

/// Runs `node <args…>` in `tests/node`; see [`run_node`].
pub fn run_node_args(args: &[&str], env: &[(&str, &str)]) -> String {
    let script = args.first().copied().unwrap_or_default();
    let dir = node_dir();
    assert!(
        dir.join("node_modules").join("bullmq").exists(),
        "the pinned Node.js packages are not installed: run `npm ci --prefix {}` (needs Node.js 20 and npm)",
        dir.display()
    );
    let mut cmd = Command::new("node");
    cmd.args(args)
        .current_dir(&dir)
        .env("REDIS_URL", redis_url());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run `node` ({e}): install Node.js 20 and npm to run the interop tests")
    });
    assert!(
        out.status.success(),
        "node {script} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("node output is UTF-8")
}

/// Deletes every key under a prefix when dropped, so a test cleans up even when it fails.
pub struct PrefixGuard(pub String);

impl Drop for PrefixGuard {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(redis_url().as_str()) else {
            return;
        };
        let Ok(mut con) = client.get_connection() else {
            return;
        };
        let pattern = format!("{}:*", self.0);
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(&pattern)
            .query(&mut con)
            .unwrap_or_default();
        for chunk in keys.chunks(500) {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(chunk).query(&mut con);
        }
    }
}
