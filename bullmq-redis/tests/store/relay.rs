//! Only what is Redis-specific; the shared cases are the conformance suite's `relay.rs`.
//!
//! A relay node's inbox is a stream: the cursor is a stream id, which means nothing in the
//! new inbox a node gets when it registers again after losing its own (swept, or its lease
//! ended).

use std::time::Duration;

use bullmq_core::backend::RelayStore;
use bullmq_core::relay::{RelayId, RelayNodeInfo, RelayPublishArgs};

use crate::support::readers::Ctx;

#[tokio::test]
async fn a_node_that_lost_its_inbox_reads_the_new_one_from_its_start() {
    let ctx = Ctx::new().await;
    let ns = RelayId::new("namespace", "cursor").unwrap();
    let id = RelayId::new("node_id", "n1").unwrap();
    let node = ctx.backend.relay_handle(&ns, Some(&id));
    let lease = Duration::from_secs(30);
    let endpoint = RelayId::new("endpoint", "e1").unwrap();
    let register = || async {
        node.relay_register_node(&id, lease, &RelayNodeInfo::default(), 100)
            .await
            .unwrap();
        node.relay_subscribe(&id, &endpoint, "t.>").await.unwrap();
    };
    let publish = |topic: &'static str| {
        let args = RelayPublishArgs {
            ts: 1,
            retain_ms: 0,
            max_size: 1024,
        };
        let node = &node;
        async move { node.relay_publish(topic, "1", args).await.unwrap() }
    };
    register().await;
    publish("t.old").await;
    // The old inbox's last entry under an id past anything the new one will hold soon, as
    // Redis counts ids when the clock is behind (a failover) or in the same millisecond.
    let inbox = format!("{}::relay:{{cursor}}:n1:inbox", ctx.prefix);
    ctx.exec(
        "XADD",
        &[
            &inbox,
            "99999999999999-0",
            "k",
            "m",
            "t",
            "t.late",
            "d",
            "1",
        ],
    );
    let read = node
        .relay_read_inbox(&id, node.relay_initial_cursor(), Duration::ZERO, 100)
        .await
        .unwrap();
    assert_eq!(read.entries.len(), 2);

    // The node is removed (as a sweep removes it), its heartbeat says so, it registers again.
    assert!(node.relay_unregister_node(&id).await.unwrap());
    assert!(!node.relay_heartbeat(&id, lease).await.unwrap());
    register().await;
    publish("t.new").await;
    let batch = node
        .relay_read_inbox(&id, &read.cursor, Duration::ZERO, 100)
        .await
        .unwrap();
    let topics: Vec<&str> = batch.entries.iter().map(|e| e.topic.as_str()).collect();
    assert_eq!(topics, ["t.new"], "the new inbox read from its start");
    // Its cursor reads on from there: nothing twice.
    let again = node
        .relay_read_inbox(&id, &batch.cursor, Duration::ZERO, 100)
        .await
        .unwrap();
    assert!(again.entries.is_empty());
    // Trimming with the old cursor counts nothing of the new inbox as consumed.
    assert_eq!(
        node.relay_trim_inbox(&id, &read.cursor, 100).await.unwrap(),
        1
    );
}
