//! The relay behind Redis Sentinel (issue 28): a subscribing node and a publisher on a
//! `redis+sentinel://` URL, the primary switched (`SENTINEL FAILOVER`). What was published
//! before (and replicated) arrives; after the switch, the node's inbox read moves to the new
//! primary and a message published there arrives, and every one after it, once and in order.
//! What may be lost is the switch window's: publishes the old primary took after the
//! promotion, before the publisher heard of it (as for adds, docs/guides/relay.md).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::relay::{Relay, RelayMessage, RelayOptions};
use bullmq::{Prefix, QueueName};
use support::wait::eventually;

use crate::sentinels::{MASTER, Sentinels};
use crate::support;

const LIMIT: Duration = Duration::from_secs(30);

async fn relay(sentinels: &Sentinels, prefix: &Prefix) -> Relay<RedisBackend> {
    let options = RedisOptions::new(sentinels.url())
        .prefix(prefix.clone())
        .response_timeout(Duration::from_secs(3));
    let backend = RedisBackend::connect(&options, QueueName::new("relay").unwrap())
        .await
        .unwrap();
    let options = RelayOptions::new()
        .namespace("sentinel")
        .block_timeout(Duration::from_millis(500));
    Relay::new(&backend, options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_keep_receiving_after_a_sentinel_failover() {
    let _one = crate::one_at_a_time().await;
    let sentinels = Sentinels::start();
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    let node = relay(&sentinels, &prefix).await;
    let publisher = relay(&sentinels, &prefix).await;
    let got: Arc<Mutex<Vec<u64>>> = Arc::default();
    let sink = Arc::clone(&got);
    let _sub = node
        .subscribe("s.>", move |m: RelayMessage<u64>| {
            sink.lock().unwrap().push(m.data);
        })
        .await
        .unwrap();
    let received = |n: u64| got.lock().unwrap().contains(&n);
    for n in 0..5 {
        publisher.publish("s.before", &n, None).await.unwrap();
    }
    eventually("the messages before the switch", LIMIT, || async {
        (0..5).all(received)
    })
    .await;
    // The node's registration and subscription are on the replica before the switch.
    sentinels.wait_replica_caught_up();

    let reply = sentinels.cli(sentinels.sentinels[0], &["SENTINEL", "FAILOVER", MASTER]);
    assert!(reply.contains("OK"), "SENTINEL FAILOVER: {reply}");
    eventually("the sentinels name the replica", LIMIT, || async {
        sentinels.named_primary() == sentinels.replica
    })
    .await;
    // Published until one arrives: those the old primary took in the switch window, or that
    // failed while the connections moved, may be lost; the first to arrive came through the
    // new primary.
    let next = Mutex::new(100_u64);
    eventually(
        "a message published after the switch arrives",
        LIMIT,
        || async {
            let n = {
                let mut next = next.lock().unwrap();
                *next += 1;
                *next
            };
            // A failed publish (the switch under way) is tried again.
            let _ = publisher.publish("s.after", &n, None).await;
            (101..=n).any(received)
        },
    )
    .await;
    let first_after = next.into_inner().unwrap();
    let lost = (101..=first_after).filter(|n| !received(*n)).count();
    println!("relay over sentinel: {lost} publishes of the switch window were not delivered");
    // And everything after it arrives, once, in order.
    let later: Vec<u64> = (1000..1010).collect();
    for n in &later {
        publisher.publish("s.later", n, None).await.unwrap();
    }
    eventually("the messages after the switch", LIMIT, || async {
        later.iter().all(|n| received(*n))
    })
    .await;
    let got = got.lock().unwrap().clone();
    assert_eq!(
        &got[..5],
        &[0, 1, 2, 3, 4],
        "before the switch: each once, in order"
    );
    let tail: Vec<u64> = got.iter().copied().filter(|n| *n >= 1000).collect();
    assert_eq!(tail, later, "after the switch: each once, in order");
    node.close().await;
    publisher.close().await;
}
