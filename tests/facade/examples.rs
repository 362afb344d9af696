//! Every one-idea example (`examples/*.rs`) run against the real servers, each in a prefix
//! and schema of its own, its stdout compared with the `// Output:` block at the end of its
//! source, as River's example tests do. The examples are built once, in one `cargo build`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::support;
use crate::support::postgres::{SchemaGuard, database_url};

/// Every example this file runs, with the features it needs beyond `redis`.
const EXAMPLES: &[&str] = &[
    "delayed_jobs",
    "priorities",
    "retries",
    "queue_events",
    "wait_until_finished",
    "flow",
    "step_job",
    "scheduler_every",
    "scheduler_cron",
    "cancellation",
    "manual_processing",
    "deduplication",
    "progress_and_logs",
    "bulk_add",
    "rate_limit",
    "pause_resume",
    "retention",
    "pg_transaction",
    "any_store",
    "node_producer",
    "health_endpoint",
    "typed_processor",
    "cluster",
];

/// The examples that need a feature beyond those of this file's module.
fn featured() -> impl Iterator<Item = &'static str> {
    [
        (cfg!(feature = "tls"), "tls"),
        (cfg!(feature = "otel"), "otel"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
}

/// The built examples, by name (the first test to ask builds them all).
fn binaries() -> &'static HashMap<&'static str, PathBuf> {
    static BUILT: OnceLock<HashMap<&'static str, PathBuf>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let names: Vec<&'static str> = EXAMPLES.iter().copied().chain(featured()).collect();
        let paths = support::workspace_bin::examples(&names, &crate::features());
        names.into_iter().zip(paths).collect()
    })
}

/// The `// Output:` block at the end of `examples/<name>.rs`, one line per `// ` line.
fn expected(name: &str) -> String {
    let path = support::workspace_dir().join(format!("examples/{name}.rs"));
    let source = std::fs::read_to_string(&path).unwrap();
    let (_, block) = source
        .split_once("\n// Output:\n")
        .unwrap_or_else(|| panic!("{} has no `// Output:` block", path.display()));
    block
        .lines()
        .map(|line| format!("{}\n", line.strip_prefix("// ").unwrap_or("")))
        .collect()
}

/// Runs example `name` with `args` in a fresh prefix and schema; its stdout.
fn run(name: &str, args: &[&str]) -> String {
    run_with(name, args, &[])
}

/// [`run`] with more environment variables (the servers an example is pointed at).
fn run_with(name: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let prefix = support::PrefixGuard::new();
    let schema = SchemaGuard::new("example");
    let output = Command::new(&binaries()[name])
        .args(args)
        .current_dir(support::workspace_dir())
        .env("REDIS_URL", support::redis_url())
        .env("DATABASE_URL", database_url())
        .env("BULLMQ_PREFIX", prefix.as_str())
        .env("BULLMQ_SCHEMA", schema.as_str())
        .envs(env.iter().copied())
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "example {name} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

macro_rules! examples {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let name = stringify!($name);
                assert_eq!(run(name, &[]), expected(name), "the output of example {name}");
            }
        )*
    };
}

examples!(
    delayed_jobs,
    priorities,
    retries,
    queue_events,
    wait_until_finished,
    flow,
    step_job,
    scheduler_every,
    scheduler_cron,
    cancellation,
    manual_processing,
    deduplication,
    progress_and_logs,
    bulk_add,
    rate_limit,
    pause_resume,
    retention,
    pg_transaction,
    node_producer,
    health_endpoint,
    typed_processor,
);

#[cfg(feature = "otel")]
examples!(otel);

/// On a private three-primary cluster (test-support starts it once per binary).
#[test]
fn cluster() {
    let url = support::redis_cluster::shared().url();
    let output = run_with("cluster", &[], &[("REDIS_CLUSTER_URL", &url)]);
    assert_eq!(output, expected("cluster"));
}

/// On a private TLS-only server whose certificate a throwaway CA signed.
#[cfg(feature = "tls")]
#[test]
fn tls() {
    let server = support::PrivateRedis::start_tls();
    let url = format!("rediss://127.0.0.1:{}", server.port);
    let ca = server.dir.join("ca.crt").display().to_string();
    let output = run_with("tls", &[], &[("REDIS_TLS_URL", &url), ("REDIS_CA", &ca)]);
    assert_eq!(output, expected("tls"));
}

/// The same program on either store, picked by the URL given.
#[test]
fn any_store() {
    let on_redis = run("any_store", &[]);
    assert_eq!(on_redis, expected("any_store"));
    let on_postgres = run("any_store", &[&database_url()]);
    assert_eq!(
        on_postgres,
        expected("any_store").replace("Redis", "PostgreSQL")
    );
}
