//! The relay beside Node.js BullMQ 6.7.6's own `Relay` (`tests/node/relay-op.mjs`), on Redis
//! and on PostgreSQL: one message published by each runtime reaches a Rust and a Node.js
//! subscriber with the same id, timestamp and data; a retained message published by Rust is
//! delivered first to a Node.js subscriber; both runtimes' getters agree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::backend::Backend;
use bullmq::relay::{Relay, RelayMessage, RelayOptions};
use serde_json::{Value, json};

use crate::support;
use crate::support::wait::eventually;

const WAIT: Duration = Duration::from_secs(20);

/// Where the two runtimes meet: the store's environment for the Node.js script.
struct Place {
    env: Vec<(&'static str, String)>,
}

/// Runs `relay-op.mjs` once and returns its first output line.
fn node_once(place: &Place, extra: &[(&'static str, &str)]) -> Value {
    let env: Vec<(&str, &str)> = place
        .env
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain(extra.iter().copied())
        .collect();
    let out = support::run_node("relay-op.mjs", &env);
    let first = out.lines().next().unwrap_or_default();
    serde_json::from_str(first).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The getters as Node.js reports them, from this Rust node.
async fn rust_getters<B: Backend>(relay: &Relay<B>) -> Value {
    let nodes: Vec<Value> = relay
        .nodes(0, -1)
        .await
        .unwrap()
        .into_iter()
        .map(|n| json!({"id": n.id, "name": n.info.name, "subscriptions": n.subscriptions}))
        .collect();
    json!({
        "counts": relay.counts().await.unwrap(),
        "patterns": relay.patterns(0, -1).await.unwrap(),
        "subscriptions": relay.subscriptions(None, 0, -1).await.unwrap(),
        "retained": relay.retained(0, -1).await.unwrap(),
        "nodes": nodes,
    })
}

async fn both_ways<B: Backend>(backend: B, place: Place) {
    let rust = Relay::new(
        &backend,
        RelayOptions::new().namespace("interop").name("rust-relay"),
    )
    .await
    .unwrap();
    let retained = rust
        .publish(
            "interop.config.x",
            &json!({"v": 1, "f": 0.1}),
            Some(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    let got: Arc<Mutex<Vec<RelayMessage<Value>>>> = Arc::default();
    let sink = Arc::clone(&got);
    let _sub = rust
        .subscribe("interop.*.x", move |m: RelayMessage<Value>| {
            sink.lock().unwrap().push(m);
        })
        .await
        .unwrap();

    // A Node.js subscriber of the exact retained topic, and of the live ones.
    let mut cmd = Command::new("node");
    cmd.arg("relay-op.mjs")
        .current_dir(support::node_dir())
        .env("REDIS_URL", support::redis_url())
        .env("OP", "subscribe")
        .env("PATTERN", "interop.>")
        .env("COUNT", "2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in &place.env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run node (install Node.js 20)");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    let mut next = async || {
        tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("a line from the Node.js relay")
            .expect("the Node.js relay ended early")
    };
    let ready = next().await;
    assert_eq!(ready["ready"], true, "{ready}");

    // A wildcard subscription gets no retained message: nothing yet on the Rust side; the
    // Node side subscribed to `interop.>`, a wildcard too.
    let from_rust = rust
        .publish(
            "interop.rust.x",
            &json!({"n": 1.5, "s": "é", "10": [1e21]}),
            None,
        )
        .await
        .unwrap();
    assert_eq!((from_rust.nodes, from_rust.endpoints), (2, 2));
    let from_node = node_once(
        &place,
        &[
            ("OP", "publish"),
            ("TOPIC", "interop.node.x"),
            ("DATA", r#"{"b":[true,null],"a":2.5e-7}"#),
        ],
    );
    assert_eq!(from_node["nodes"], 2, "{from_node}");
    assert_eq!(from_node["endpoints"], 2, "{from_node}");

    let node_saw = [next().await, next().await];
    eventually("both messages in Rust", WAIT, || async {
        got.lock().unwrap().len() >= 2
    })
    .await;
    let rust_saw = got.lock().unwrap().clone();
    let mids = [from_rust.mid.as_str(), from_node["mid"].as_str().unwrap()];
    for (i, mid) in mids.iter().enumerate() {
        let r = rust_saw
            .iter()
            .find(|m| m.mid == *mid)
            .expect("Rust got it");
        let n = node_saw
            .iter()
            .find(|m| m["mid"] == *mid)
            .expect("Node got it");
        assert_eq!(n["topic"], r.topic.as_str());
        assert_eq!(n["ts"], r.ts, "message {i}");
        assert_eq!(n["retained"], false);
        let node_data: Value = serde_json::from_str(n["data"].as_str().unwrap()).unwrap();
        assert_eq!(node_data, r.data, "message {i}");
        // The text Node.js re-serializes is what Rust's JSON writer gives for the same value.
        assert_eq!(
            n["data"].as_str().unwrap(),
            bullmq_core::json::to_string(&r.data).unwrap(),
            "message {i}"
        );
    }

    // Getters read alike while both nodes live (the Node.js publisher closed).
    writeln!(stdin, "getters").unwrap();
    let node_getters = next().await;
    let mut rust_view = rust_getters(&rust).await;
    assert_eq!(node_getters["getters"]["counts"], rust_view["counts"]);
    assert_eq!(node_getters["getters"]["patterns"], rust_view["patterns"]);
    assert_eq!(
        node_getters["getters"]["subscriptions"],
        rust_view["subscriptions"]
    );
    assert_eq!(node_getters["getters"]["retained"], rust_view["retained"]);
    assert_eq!(node_getters["getters"]["nodes"], rust_view["nodes"]);
    assert_eq!(rust_view["retained"][0]["mid"], retained.mid.as_str());
    writeln!(stdin, "bye").unwrap();
    drop(stdin);
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success());

    // A retained message Rust published is delivered first to a new Node.js subscriber of
    // its exact topic.
    let mut cmd_env = place.env.clone();
    cmd_env.push(("OP", "subscribe".into()));
    let once = node_once(
        &Place { env: cmd_env },
        &[("PATTERN", "interop.config.x"), ("COUNT", "1")],
    );
    // `node_once` reads the first line: the subscriber's ready line comes after the retained
    // message was delivered (it is delivered inside subscribe).
    assert_eq!(once["retained"], true, "{once}");
    assert_eq!(once["mid"], retained.mid.as_str());
    assert_eq!(once["data"], r#"{"v":1,"f":0.1}"#);
    rust_view = rust_getters(&rust).await;
    assert_eq!(rust_view["counts"]["nodes"], 1, "the Node.js nodes closed");
    rust.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_and_rust_relays_share_messages_on_redis() {
    let guard = support::PrefixGuard::new();
    let options = bullmq::redis::RedisOptions::new(support::redis_url())
        .prefix(bullmq::Prefix::new(&guard.0).unwrap());
    let backend =
        bullmq::redis::RedisBackend::connect(&options, bullmq::QueueName::new("r").unwrap())
            .await
            .unwrap();
    let place = Place {
        env: vec![
            ("STORE", "redis".into()),
            ("PREFIX", guard.0.clone()),
            ("NAMESPACE", "interop".into()),
        ],
    };
    both_ways(backend, place).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_and_rust_relays_share_messages_on_postgres() {
    let schema = support::postgres::SchemaGuard::new("relay_interop");
    let backend = schema.backend("r").await;
    let place = Place {
        env: vec![
            ("STORE", "postgres".into()),
            ("NAMESPACE", "interop".into()),
            ("SCHEMA", schema.name().as_str().to_owned()),
            ("DATABASE_URL", support::postgres::database_url()),
        ],
    };
    both_ways(backend, place).await;
}
