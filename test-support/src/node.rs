//! The pinned Node.js BullMQ packages run as child processes by the interop tests of every
//! crate: `tests/node` (bullmq@6.7.6, the pin, and its companions) and, for a fleet being
//! upgraded, `tests/node-6.7.0` (the previous release, bullmq@6.7.0).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::urls::{database_url, redis_url};

/// The folder of the previous Node.js release beside the workspace root, for mixed-version
/// fleet tests: `tests/node-6.7.0`.
pub const PREVIOUS_NODE_PACKAGE: &str = "tests/node-6.7.0";

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

/// The folder of the previous release's Node.js helpers ([`PREVIOUS_NODE_PACKAGE`]).
pub fn previous_node_dir() -> PathBuf {
    workspace_dir().join(PREVIOUS_NODE_PACKAGE)
}

/// Runs `node <script>` in `tests/node` with `env`, returning its stdout; see
/// [`run_node_args`].
pub fn run_node(script: &str, env: &[(&str, &str)]) -> String {
    run_node_args(&[script], env)
}

/// Runs `node <args…>` in `tests/node` with `REDIS_URL` and `DATABASE_URL` set to the test
/// services (then `env`), returning its stdout; see [`run_node_in`].
pub fn run_node_args(args: &[&str], env: &[(&str, &str)]) -> String {
    run_node_in(&node_dir(), args, env)
}

/// Runs `node <args…>` in the Node.js package folder `dir` (one with a `package.json` and a
/// lock, installed with `npm ci --prefix <dir>`), so a script there loads that folder's
/// bullmq, with `REDIS_URL` and `DATABASE_URL` set to the test services (then `env`);
/// returns its stdout. Panics with what to do when Node.js or the folder's packages are
/// missing, or with the script's stderr when it fails.
pub fn run_node_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let script = args.first().copied().unwrap_or_default();
    assert_installed(dir);
    let mut cmd = Command::new("node");
    cmd.args(args)
        .current_dir(dir)
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
        "node {script} (in {}) failed ({}):\n{}",
        dir.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("node output is UTF-8")
}

/// Panics with what to do when the Node.js package folder `dir` has no installed bullmq.
pub(crate) fn assert_installed(dir: &Path) {
    assert!(
        dir.join("node_modules").join("bullmq").exists(),
        "the pinned Node.js packages are not installed: run `npm ci --prefix {}` (needs Node.js 20 and npm)",
        dir.display()
    );
}

/// [`run_node_args`], its output read as one JSON value.
pub fn run_node_json(args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    run_node_json_in(&node_dir(), args, env)
}

/// [`run_node_in`], its output read as one JSON value.
pub fn run_node_json_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let out = run_node_in(dir, args, env);
    serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("node {args:?} printed {out:?}, not JSON: {e}"))
}
