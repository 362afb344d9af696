//! The pinned Node.js BullMQ (`tests/node`, bullmq@6.7.6 and its companions), run as a child
//! process by the interop tests of every crate.

use std::path::PathBuf;
use std::process::Command;

use crate::urls::{database_url, redis_url};

/// The workspace's root folder (this crate lives at `<root>/test-support`), whichever crate's
/// test asks.
pub fn workspace_dir() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .expect("test-support sits in the workspace root")
        .to_path_buf()
}

/// The folder of the pinned Node.js helpers: the workspace's `tests/node`.
pub fn node_dir() -> PathBuf {
    workspace_dir().join("tests").join("node")
}

/// Runs `node <script>` in `tests/node` with `env`, returning its stdout; see
/// [`run_node_args`].
pub fn run_node(script: &str, env: &[(&str, &str)]) -> String {
    run_node_args(&[script], env)
}

/// Runs `node <args…>` in `tests/node` with `REDIS_URL` and `DATABASE_URL` set to the test
/// services (then `env`), returning its stdout. Panics with what to do when Node.js or the
/// pinned packages are missing, or with the script's stderr when it fails.
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
        .env("REDIS_URL", redis_url())
        .env("DATABASE_URL", database_url());
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

/// [`run_node_args`], its output read as one JSON value.
pub fn run_node_json(args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let out = run_node_args(args, env);
    serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("node {args:?} printed {out:?}, not JSON: {e}"))
}
