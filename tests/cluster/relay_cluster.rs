//! The relay's `node_connections` on a cluster asks every primary, as upstream asks every
//! node: a namespace's inbox connections go to the primary of its slot (the namespace is a
//! hash tag), which need not be the one the backend's queue lives on. One namespace on each
//! of the three primaries: each node's inbox connection is found, whichever primary holds it;
//! and a client of that name on another primary (where an inbox connection opened before a
//! slot moved would be) is listed too.

use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::relay::{Relay, RelayOptions};
use bullmq::{Prefix, QueueName};
use support::redis_cluster::{TestCluster, shared};
use support::wait::eventually;

use crate::support;

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_connections_are_found_on_every_primary() {
    let cluster = shared();
    // The hash tag in the queue's name, none in the prefix: the queue's slot and each
    // namespace's are apart.
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    let options = RedisOptions::new(cluster.url()).prefix(prefix);
    let queue = QueueName::new(format!("{{{}}}", support::unique_name("q"))).unwrap();
    let backend = RedisBackend::connect(&options, queue).await.unwrap();
    let tags = cluster.tags_on_every_primary();
    let mut nodes = Vec::new();
    for (tag, _) in &tags {
        let options = RelayOptions::new()
            .namespace(tag.as_str())
            .block_timeout(Duration::from_millis(500));
        let node = Relay::new(&backend, options).await.unwrap();
        // A subscription starts the node's inbox read.
        let sub = node
            .subscribe("a.b", |_: bullmq::relay::RelayMessage<u64>| {})
            .await;
        nodes.push((node, sub.unwrap()));
    }
    for ((node, _), (tag, port)) in nodes.iter().zip(&tags) {
        eventually(
            &format!("the inbox connection of namespace {tag}, on the primary at {port}"),
            LIMIT,
            || async { node.node_connections(None).await.unwrap().len() == 1 },
        )
        .await;
    }
    // A client named as the first node's inbox connection, on another primary.
    let (node, _) = &nodes[0];
    let owner = tags[0].1;
    let address = node.node_connections(None).await.unwrap()[0]
        .address
        .clone();
    let list = TestCluster::cli(owner, &["CLIENT", "LIST"]);
    let name = list
        .lines()
        .find(|l| l.split(' ').any(|f| f == format!("addr={address}")))
        .and_then(|l| l.split(' ').find_map(|f| f.strip_prefix("name=")))
        .unwrap()
        .to_owned();
    let mut elsewhere = TestCluster::node(tags[1].1).await;
    let _: () = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(&name)
        .query_async(&mut elsewhere)
        .await
        .unwrap();
    assert_eq!(node.node_connections(None).await.unwrap().len(), 2);
    for (node, _) in nodes {
        node.close().await;
    }
}
