//! The relay on PostgreSQL when its `LISTEN` connection is terminated
//! (`pg_terminate_backend`): the node opens a new one (named again) and reads on, every
//! message published meanwhile delivered once, in order (entries are acknowledged by id).

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::relay::{Relay, RelayMessage, RelayOptions};
use serde_json::Value;

use crate::support;
use crate::support::eventually;
use crate::support::postgres::SchemaGuard;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_listen_connection_loses_and_repeats_nothing() {
    let schema = SchemaGuard::new("relay_kill");
    let backend = schema.backend("r").await;
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
    eventually("the named LISTEN connection", WAIT, || async {
        node.node_connections(None).await.unwrap().len() == 1
    })
    .await;
    let before = node.node_connections(None).await.unwrap();
    let mut admin = support::postgres::admin().await;
    let killed: i64 = bullmq::postgres::sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity \
         WHERE application_name LIKE 'bullmq:relay:%' \
           AND COALESCE(host(client_addr) || ':' || client_port, 'local') = $1) t WHERE killed",
    )
    .bind(&before[0].address)
    .fetch_one(&mut admin)
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
    sent.push(publisher.publish("k.last", &6, None).await.unwrap().mid);
    eventually("the last message", WAIT, || async {
        got.lock().unwrap().len() >= sent.len()
    })
    .await;
    assert_eq!(*got.lock().unwrap(), sent, "each once, in order");
    eventually("a new named LISTEN connection", WAIT, || async {
        let now = node.node_connections(None).await.unwrap();
        now.len() == 1 && now[0].address != before[0].address
    })
    .await;
    node.close().await;
    publisher.close().await;
}
