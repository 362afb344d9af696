//! The relay on Redis when its inbox connection is killed (`CLIENT KILL`): the node opens a
//! new one (named again) and reads on from its cursor, every message published meanwhile
//! delivered once, in order.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::relay::{Relay, RelayMessage, RelayOptions};
use bullmq::{Prefix, QueueName};
use serde_json::Value;

use crate::support;
use crate::support::eventually;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_inbox_connection_loses_and_repeats_nothing() {
    let guard = support::PrefixGuard::new();
    let options = RedisOptions::new(support::redis_url()).prefix(Prefix::new(&guard.0).unwrap());
    let backend = RedisBackend::connect(&options, QueueName::new("r").unwrap())
        .await
        .unwrap();
    let opts = || {
        RelayOptions::new()
            .namespace("killed")
            .block_timeout(Duration::from_millis(500))
    };
    let node = Relay::new(&backend, opts()).await.unwrap();
    let publisher = Relay::new(&backend, opts()).await.unwrap();
    let got: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&got);
    let _sub = node
        .subscribe("k.>", move |m: RelayMessage<Value>| {
            sink.lock().unwrap().push(m.mid);
        })
        .await
        .unwrap();
    let mut sent = vec![publisher.publish("k.0", &0, None).await.unwrap().mid];
    eventually("the first message", WAIT, || async {
        got.lock().unwrap().len() == 1
    })
    .await;
    // Its inbox connection, as the store sees it: blocked in XREAD.
    eventually("the named inbox connection", WAIT, || async {
        node.node_connections(None).await.unwrap().len() == 1
    })
    .await;
    let inbox = node.node_connections(None).await.unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ADDR")
        .arg(&inbox[0].address)
        .arg("SKIPME")
        .arg("yes")
        .query_async(&mut support::redis().await)
        .await
        .unwrap();
    assert_eq!(killed, 1);
    for i in 1..=5 {
        sent.push(publisher.publish("k.n", &i, None).await.unwrap().mid);
    }
    eventually("every message", WAIT, || async {
        got.lock().unwrap().len() >= sent.len()
    })
    .await;
    // A late duplicate would show up here.
    let last = publisher.publish("k.last", &6, None).await.unwrap().mid;
    sent.push(last);
    eventually("the last message", WAIT, || async {
        got.lock().unwrap().len() >= sent.len()
    })
    .await;
    assert_eq!(*got.lock().unwrap(), sent, "each once, in order");
    eventually("a new named inbox connection", WAIT, || async {
        let now = node.node_connections(None).await.unwrap();
        now.len() == 1 && now[0].address != inbox[0].address
    })
    .await;
    node.close().await;
    publisher.close().await;
}
