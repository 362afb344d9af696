//! Only what is Redis-specific; the shared cases are the conformance suite's `lifecycle.rs`.
//!
//! `Lifecycle` on the real Redis: client names as Node.js writes and reads them (checked
//! against Node.js BullMQ 6.7.6 itself when it is installed), closing, and keys.

use crate::support::readers as support;

use std::time::Duration;

use bullmq_core::backend::{Blocking, ClientRole, Lifecycle, NodeKey, Queries};
use bullmq_core::clock::ManualClock;
use bullmq_core::{Error, Prefix, QueueName};
use bullmq_test_support::NodeChild;
use support::{PrefixGuard, T0, blocked_in, clients_named, unique_prefix};

fn worker(name: &str) -> ClientRole {
    ClientRole::Worker {
        name: Some(name.to_owned()),
    }
}

#[tokio::test]
async fn client_names_are_prefix_and_base64_queue_like_node() {
    let prefix = unique_prefix();
    let b = support::backend(&prefix, "wörk q", &ManualClock::new(T0)).await;
    // `Buffer.from("wörk q").toString("base64")` in Node.js.
    let base = format!("{prefix}:d8O2cmsgcQ==");
    assert_eq!(b.client_name(&ClientRole::Queue), base);
    assert_eq!(b.client_name(&ClientRole::Worker { name: None }), base);
    assert_eq!(b.client_name(&worker("")), base);
    assert_eq!(b.client_name(&worker("w1")), format!("{base}:w:w1"));
    assert_eq!(
        b.client_name(&ClientRole::QueueEvents),
        format!("{base}:qe")
    );
    assert_eq!(b.qualified_name(), format!("{prefix}:wörk q"));
    assert_eq!(b.to_key("wait"), format!("{prefix}:wörk q:wait"));
    assert_eq!(b.to_key("7:logs"), format!("{prefix}:wörk q:7:logs"));
}

#[tokio::test]
async fn roles_name_their_dedicated_connections_and_the_client_list_finds_them() {
    let ctx = support::Ctx::new().await;
    let b = &ctx.backend;
    let base = b.client_name(&ClientRole::Queue);
    b.set_client_role(worker("w1")).await.unwrap();
    b.set_client_role(ClientRole::QueueEvents).await.unwrap();
    b.set_client_role(ClientRole::Queue).await.unwrap();
    assert_eq!(clients_named(&format!("{base}:w:w1")).await.len(), 1);
    assert_eq!(clients_named(&format!("{base}:qe")).await.len(), 1);
    // A queue names nothing: Node.js' getWorkers would count it as an unnamed worker.
    assert!(clients_named(&base).await.is_empty());

    // Another queue's worker under the same prefix is not ours.
    let other = b.for_queue(&QueueName::new("other").unwrap(), None);
    other.set_client_role(worker("w1")).await.unwrap();
    // A worker without a name: its blocking connection is named after the queue alone.
    let unnamed = support::backend(&ctx.prefix, "q", &ctx.clock).await;
    assert_eq!(unnamed.wait_for_job(Duration::ZERO).await.unwrap(), None);

    let mut clients = b.get_client_list().await.unwrap();
    clients.sort_by(|a, b| a.name.cmp(&b.name));
    let names: Vec<&str> = clients.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [base.clone(), format!("{base}:qe"), format!("{base}:w:w1")]
    );
    for c in &clients {
        assert!(c.addr.contains(':'), "{c:?}");
        assert!(c.age.is_some() && c.idle.is_some(), "{c:?}");
        assert!(c.raw.iter().any(|(k, v)| k == "name" && *v == c.name));
    }
    other.close(true).await.unwrap();
    unnamed.close(true).await.unwrap();
}

#[tokio::test]
async fn a_lost_blocking_connection_comes_back_with_its_name() {
    let ctx = support::Ctx::new().await;
    let b = &ctx.backend;
    b.set_client_role(worker("phoenix")).await.unwrap();
    let name = b.client_name(&worker("phoenix"));
    let line = clients_named(&name)
        .await
        .pop()
        .expect("the named connection");
    let client_id = line
        .split(' ')
        .find_map(|kv| kv.strip_prefix("id="))
        .expect("an id")
        .to_owned();
    ctx.exec("CLIENT", &["KILL", "ID", &client_id]);
    assert!(clients_named(&name).await.is_empty());

    // The first wait may meet the dead socket (an error, and the connection is dropped); a
    // fresh connection is then opened and named again.
    let mut waited = b.wait_for_job(Duration::from_millis(10)).await;
    if let Err(e) = &waited {
        assert!(e.backend_kind().is_some(), "{e}");
        waited = b.wait_for_job(Duration::from_millis(10)).await;
    }
    assert_eq!(waited.unwrap(), None);
    assert_eq!(clients_named(&name).await.len(), 1);
}

#[tokio::test]
async fn close_marks_every_clone_closing_and_refuses_waits() {
    let ctx = support::Ctx::new().await;
    let b = ctx.backend.clone();
    b.wait_until_ready().await.unwrap();
    b.set_client_role(worker("closer")).await.unwrap();
    let name = b.client_name(&worker("closer"));
    let waiting = support::spawn_wait(&b, Duration::from_secs(10));
    blocked_in(&name, "bzpopmin").await;
    let sibling = b.for_queue(&QueueName::new("other").unwrap(), None);

    assert!(!ctx.backend.is_closing());
    b.close(false).await.unwrap();
    assert!(ctx.backend.is_closing(), "clones share the state");
    assert!(!sibling.is_closing(), "a sibling has its own");
    support::interrupted(
        waiting,
        Duration::from_millis(500),
        "close interrupts the wait",
    )
    .await;
    support::gone(&name, "the blocking connection").await;
    let refused = b.wait_for_job(Duration::from_millis(10)).await;
    assert!(matches!(refused, Err(Error::Closed(_))), "{refused:?}");
    // The shared connection is not the blocking one: queries still work.
    assert!(b.get_counts(&[], None).await.unwrap().is_empty());
}

#[tokio::test]
async fn disconnect_interrupts_but_leaves_the_backend_usable() {
    let ctx = support::Ctx::new().await;
    let b = ctx.backend.clone();
    b.set_client_role(worker("d")).await.unwrap();
    let waiting = support::spawn_wait(&b, Duration::from_secs(10));
    blocked_in(&b.client_name(&worker("d")), "bzpopmin").await;
    b.disconnect().await.unwrap();
    support::interrupted(
        waiting,
        Duration::from_millis(500),
        "disconnect interrupts the wait",
    )
    .await;
    assert!(!b.is_closing());
    // The dropped connection closes asynchronously; until it has, its interrupted BZPOPMIN
    // still waits in Redis and would take the marker (a lost wake-up, not a lost job).
    let name = b.client_name(&worker("d"));
    support::gone(&name, "the old blocking connection").await;
    ctx.exec("ZADD", &[&ctx.key("marker"), "0", "0"]);
    let marker = b.wait_for_job(Duration::from_secs(1)).await.unwrap();
    assert_eq!(marker.map(|m| m.member).as_deref(), Some("0"));
}

#[tokio::test]
async fn block_timeouts_follow_node_for_this_server() {
    let ctx = support::Ctx::new().await;
    let b = &ctx.backend;
    // The server's version is read when the blocking connection opens.
    b.reconnect_blocking().await.unwrap();
    let info: String = ctx.cmd(redis::cmd("INFO").arg("server"));
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or_default()
        .to_owned();
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    let modern = parts.as_slice() >= [7, 0, 8].as_slice();
    let t = b.block_timeouts();
    let expected_min = if modern { 1 } else { 2 };
    assert_eq!(
        t.minimum,
        Duration::from_millis(expected_min),
        "Redis {version}"
    );
    assert_eq!(t.maximum, Duration::from_secs(10));
}

#[tokio::test]
async fn node_keys_and_siblings() {
    let ctx = support::Ctx::new().await;
    let b = &ctx.backend;
    assert_eq!(
        b.parse_node_key("a:{b}:c:reports:42"),
        Some(NodeKey {
            prefix: "a:{b}:c".to_owned(),
            queue: "reports".to_owned(),
            id: "42".to_owned(),
        })
    );
    assert_eq!(b.parse_node_key("reports:42"), None);
    let prefix = Prefix::new("other-prefix").unwrap();
    let sibling = b.for_queue(&QueueName::new("reports").unwrap(), Some(&prefix));
    assert_eq!(sibling.qualified_name(), "other-prefix:reports");
    assert_eq!(sibling.to_key("42"), "other-prefix:reports:42");
    let same_prefix = b.for_queue(&QueueName::new("reports").unwrap(), None);
    assert_eq!(
        same_prefix.qualified_name(),
        format!("{}:reports", ctx.prefix)
    );
    let key = same_prefix.to_key("42");
    let parsed = b.parse_node_key(&key).unwrap();
    assert_eq!(
        (parsed.prefix, parsed.queue, parsed.id),
        (ctx.prefix.clone(), "reports".to_owned(), "42".to_owned())
    );
}

/// Starts a named Node.js worker, prints what Node.js' `getWorkers()` sees (raw names, sorted,
/// as JSON), then waits for a line on stdin before closing.
const NODE_WORKERS: &str = r"
const [url, prefix, queueName] = process.argv.slice(1);
const { Worker, Queue } = require('bullmq');
const IORedis = require('ioredis');
(async () => {
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const worker = new Worker(queueName, null, { connection, prefix, name: 'node-w', autorun: false });
  await worker.waitUntilReady();
  const queue = new Queue(queueName, { connection, prefix });
  const seen = (await queue.getWorkers()).map(w => w.rawname).sort();
  console.log(JSON.stringify(seen));
  process.stdin.once('data', async () => {
    await worker.close(); await queue.close(); connection.disconnect(); process.exit(0);
  });
})().catch(e => { console.error(e); process.exit(1); });
";

#[tokio::test(flavor = "multi_thread")]
async fn node_and_rust_see_each_others_workers() {
    let prefix = unique_prefix();
    let _cleanup = PrefixGuard(prefix.clone());
    let b = support::backend(&prefix, "mixed", &ManualClock::new(T0)).await;
    b.set_client_role(worker("rust-w")).await.unwrap();

    let mut node = NodeChild::spawn(NODE_WORKERS, &[&prefix, "mixed"]);
    let seen_by_node = node.line("answers").await;
    let base = b.client_name(&ClientRole::Queue);
    let seen_by_node: Vec<String> = serde_json::from_str(&seen_by_node).expect("JSON");
    assert_eq!(
        seen_by_node,
        [format!("{base}:w:node-w"), format!("{base}:w:rust-w")]
    );

    let mut seen_by_rust: Vec<String> = b
        .get_client_list()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    seen_by_rust.sort();
    assert_eq!(seen_by_rust, seen_by_node);

    node.finish().await;
    b.close(true).await.unwrap();
}
