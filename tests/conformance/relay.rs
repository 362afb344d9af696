//! The relay (Node.js BullMQ 6.7's experimental pub/sub) on every store: exact topics, both
//! wildcards, retained messages delivered first and expiring, inbox trimming and lag, lease
//! expiry and sweeping, recovery after a lost lease and after a killed inbox connection.
//! Every node is a `Relay` of its own, in a
//! namespace of its own within the test's store.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bullmq::QueueName;
use bullmq::backend::{Backend, RelayStore};
use bullmq::relay::{
    Relay, RelayErrorCode, RelayEvent, RelayId, RelayMessage, RelayNodeInfo, RelayOptions,
    RelaySubscription, RelaySubscriptionFilter,
};
use serde_json::{Value, json};

use crate::store::Store;
use crate::support::{eventually, next_event};

/// How long a message may take to arrive on a loaded machine.
const WAIT: Duration = Duration::from_secs(20);

type Inbox = Arc<Mutex<Vec<RelayMessage<Value>>>>;

/// A handler that keeps what it receives.
fn collect(into: &Inbox) -> impl Fn(RelayMessage<Value>) + Send + Sync + 'static {
    let into = Arc::clone(into);
    move |m| {
        into.lock().unwrap().push(m);
    }
}

/// `node` subscribed to `pattern`, with the inbox that keeps what it receives.
async fn subscribed<B: Backend>(node: &Relay<B>, pattern: &str) -> (Inbox, RelaySubscription<B>) {
    let inbox = Inbox::default();
    let subscription = node.subscribe(pattern, collect(&inbox)).await.unwrap();
    (inbox, subscription)
}

async fn received(inbox: &Inbox, n: usize) -> Vec<RelayMessage<Value>> {
    eventually(&format!("{n} message(s)"), WAIT, || async {
        inbox.lock().unwrap().len() >= n
    })
    .await;
    inbox.lock().unwrap().clone()
}

/// Asserts that the store refused a relay call with `code`.
fn assert_refused(err: &bullmq::Error, code: RelayErrorCode) {
    assert!(
        matches!(err, bullmq::Error::Relay(e) if e.code == code),
        "{err}"
    );
}

/// A namespace of the test's own, and options for a node in it.
fn opts(namespace: &str) -> RelayOptions {
    RelayOptions::new()
        .namespace(namespace)
        .block_timeout(Duration::from_millis(500))
}

async fn backend<S: Store>(store: &S) -> S::B {
    store.backend(&QueueName::new("relay").unwrap()).await
}

pub async fn exact_topics_reach_their_subscribers<S: Store>() {
    let store = S::isolated().await;
    let b = backend(&store).await;
    let publisher = Relay::new(&b, opts("exact").name("pub")).await.unwrap();
    let subscriber = Relay::new(&b, opts("exact").name("sub")).await.unwrap();
    let (inbox, _sub) = subscribed(&subscriber, "orders.42.status").await;

    let sent = publisher
        .publish(
            "orders.42.status",
            &json!({"state": "paid", "total": 1.5}),
            None,
        )
        .await
        .unwrap();
    assert_eq!((sent.nodes, sent.endpoints), (1, 1));
    let missed = publisher
        .publish("orders.43.status", &1, None)
        .await
        .unwrap();
    assert_eq!((missed.nodes, missed.endpoints), (0, 0));
    assert!(missed.mid.parse::<u128>().unwrap() > sent.mid.parse::<u128>().unwrap());

    let got = received(&inbox, 1).await;
    assert_eq!(got[0].topic, "orders.42.status");
    assert_eq!(got[0].mid, sent.mid);
    assert_eq!(got[0].data, json!({"state": "paid", "total": 1.5}));
    assert!(!got[0].retained);
    assert!(got[0].ts > 0);

    let counts = publisher.counts().await.unwrap();
    assert_eq!(
        (counts.nodes, counts.subscriptions, counts.patterns),
        (2, 1, 1)
    );
    let nodes = publisher.nodes(0, -1).await.unwrap();
    assert_eq!(nodes.len(), 2);
    // Listed by registration time: two nodes registered within one millisecond come in id
    // order, so the subscriber is found by its id.
    let sub = nodes
        .iter()
        .find(|node| node.id == subscriber.node_id())
        .expect("the subscriber is listed");
    assert_eq!(sub.info.name.as_deref(), Some("sub"));
    assert_eq!(sub.subscriptions, 1);
    let subs = publisher
        .subscriptions(
            Some(&RelaySubscriptionFilter::Node(subscriber.node_id().into())),
            0,
            -1,
        )
        .await
        .unwrap();
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].pattern, "orders.42.status");
    assert!(
        publisher
            .namespaces()
            .await
            .unwrap()
            .contains(&"exact".to_owned())
    );

    subscriber.close().await;
    let after = publisher
        .publish("orders.42.status", &2, None)
        .await
        .unwrap();
    assert_eq!(after.endpoints, 0, "a closed node is unsubscribed and gone");
    assert_eq!(publisher.counts().await.unwrap().nodes, 1);
    publisher.close().await;
}

pub async fn wildcards_route_as_upstream<S: Store>() {
    let store = S::isolated().await;
    let b = backend(&store).await;
    let node = Relay::new(&b, opts("wild")).await.unwrap();
    let (star, _a) = subscribed(&node, "orders.*.status").await;
    let (tail, _b) = subscribed(&node, "orders.>").await;

    let both = node.publish("orders.1.status", &"s", None).await.unwrap();
    assert_eq!(
        (both.nodes, both.endpoints),
        (1, 2),
        "one node, both endpoints"
    );
    let deep = node.publish("orders.1.items.2", &"d", None).await.unwrap();
    assert_eq!(deep.endpoints, 1);
    let root = node.publish("orders", &"r", None).await.unwrap();
    assert_eq!(root.endpoints, 0, "`>` needs at least one segment");
    let other = node.publish("invoices.1.status", &"o", None).await.unwrap();
    assert_eq!(other.endpoints, 0);

    let tail_got = received(&tail, 2).await;
    let star_got = received(&star, 1).await;
    assert_eq!(star_got.len(), 1);
    assert_eq!(star_got[0].mid, both.mid);
    let topics: Vec<&str> = tail_got.iter().map(|m| m.topic.as_str()).collect();
    assert_eq!(topics, ["orders.1.status", "orders.1.items.2"]);

    let patterns = node.patterns(0, -1).await.unwrap();
    let names: Vec<&str> = patterns.iter().map(|p| p.pattern.as_str()).collect();
    assert_eq!(names, ["orders.*.status", "orders.>"]);
    let by_pattern = node
        .subscriptions(
            Some(&RelaySubscriptionFilter::Pattern("orders.>".into())),
            0,
            -1,
        )
        .await
        .unwrap();
    assert_eq!(by_pattern.len(), 1);
    node.close().await;
}

pub async fn retained_messages_come_first_then_expire<S: Store>() {
    let store = S::isolated().await;
    let b = backend(&store).await;
    let node = Relay::new(&b, opts("retain")).await.unwrap();
    let kept = node
        .publish(
            "config.flags",
            &json!({"beta": true}),
            Some(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    let short = node
        .publish("config.short", &1, Some(Duration::from_secs(3)))
        .await
        .unwrap();
    // The store's copy expires 3 s after the publish ran, so surely by 3 s (and a few
    // milliseconds of rounding) after it returned.
    let short_gone_by = Instant::now() + Duration::from_millis(3_020);
    let retained = node.retained(0, -1).await.unwrap();
    assert_eq!(retained.len(), 2);
    assert_eq!(retained[0].mid, short.mid, "ordered by expiry");
    assert_eq!(retained[1].data, r#"{"beta":true}"#);

    let (exact, _s) = subscribed(&node, "config.flags").await;
    let got = received(&exact, 1).await;
    assert!(got[0].retained);
    assert_eq!(got[0].mid, kept.mid);
    assert_eq!(got[0].topic, "config.flags");
    assert_eq!(got[0].data, json!({"beta": true}));

    let (wildcard, _w) = subscribed(&node, "config.*").await;
    let live = node
        .publish("config.flags", &json!({"beta": false}), None)
        .await
        .unwrap();
    let got = received(&wildcard, 1).await;
    assert_eq!(got[0].mid, live.mid, "no retained message for a wildcard");
    let got = received(&exact, 2).await;
    assert!(!got[1].retained);

    eventually("the short retained message to expire", WAIT, || async {
        node.retained(0, -1).await.unwrap().len() == 1
    })
    .await;
    // The listing drops it once its expiry score is reached; Redis expires the copy a
    // subscription is handed only once that same millisecond has passed, so a subscription
    // in that millisecond is still handed it (seen once under load on Cluster). The deadline
    // above is past both.
    tokio::time::sleep_until(short_gone_by.into()).await;
    let (late, _l) = subscribed(&node, "config.short").await;
    assert!(node.delete_retained("config.flags").await.unwrap());
    assert!(!node.delete_retained("config.flags").await.unwrap());
    let (fresh, _f) = subscribed(&node, "config.flags").await;
    // A marker published after both subscriptions: once it arrives, a retained message
    // would have been delivered before it.
    node.publish("config.short", &"marker", None).await.unwrap();
    node.publish("config.flags", &"marker", None).await.unwrap();
    assert_eq!(received(&late, 1).await[0].data, json!("marker"));
    assert_eq!(received(&fresh, 1).await[0].data, json!("marker"));
    node.close().await;
}

pub async fn a_full_inbox_drops_the_oldest_and_reports_lag<S: Store>() {
    let store = S::isolated().await;
    let b = backend(&store).await;
    let publisher = Relay::new(&b, opts("lag")).await.unwrap();
    // A node that never reads: its inbox at the store level.
    let ns = RelayId::new("namespace", "lag").unwrap();
    let id = RelayId::new("node_id", "idle-node").unwrap();
    let idle = b.relay_handle(&ns, Some(&id));
    let info = RelayNodeInfo::default();
    idle.relay_register_node(&id, Duration::from_secs(30), &info, 5)
        .await
        .unwrap();
    let endpoint = RelayId::new("endpoint", "e1").unwrap();
    idle.relay_subscribe(&id, &endpoint, "metrics.>")
        .await
        .unwrap();
    for i in 0..12 {
        publisher.publish("metrics.cpu", &i, None).await.unwrap();
    }
    let backlog = idle
        .relay_trim_inbox(&id, idle.relay_initial_cursor(), 5)
        .await
        .unwrap();
    assert_eq!(backlog, 5, "the inbox keeps its newest 5");
    let batch = idle
        .relay_read_inbox(&id, idle.relay_initial_cursor(), Duration::ZERO, 100)
        .await
        .unwrap();
    let data: Vec<&str> = batch.entries.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(data, ["7", "8", "9", "10", "11"]);
    assert_eq!(batch.entries[0].endpoints, ["e1"]);
    let nodes = publisher.nodes(0, -1).await.unwrap();
    let idle_state = nodes.iter().find(|n| n.id == "idle-node").unwrap();
    assert_eq!(idle_state.dropped, 7);
    assert_eq!(idle_state.backlog, 5);
    // Consumed up to the cursor: nothing left.
    assert_eq!(
        idle.relay_trim_inbox(&id, &batch.cursor, 5).await.unwrap(),
        0
    );
    assert!(idle.relay_unregister_node(&id).await.unwrap());

    // A node whose handler is held up falls behind and says so.
    let slow = Relay::new(&b, opts("lag").inbox_max_length(20).lag_threshold(10))
        .await
        .unwrap();
    let mut events = slow.events();
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (entered, in_handler) = std::sync::mpsc::channel::<()>();
    let held = Mutex::new((held, entered));
    let _s = slow
        .subscribe("jobs.>", move |_m: RelayMessage<Value>| {
            // Held up without holding up the runtime's other tasks.
            tokio::task::block_in_place(|| {
                let (held, entered) = &*held.lock().unwrap();
                let _ = entered.send(());
                let _ = held.recv_timeout(WAIT);
            });
        })
        .await
        .unwrap();
    publisher.publish("jobs.first", &0, None).await.unwrap();
    // Once the first message is in its handler, pile up more than the inbox keeps.
    tokio::task::spawn_blocking(move || in_handler.recv_timeout(WAIT))
        .await
        .unwrap()
        .expect("the first message handled");
    for i in 0..30 {
        publisher.publish("jobs.more", &i, None).await.unwrap();
    }
    for _ in 0..40 {
        let _ = release.send(());
    }
    let lag = next_event(&mut events, "a lag event", WAIT, |e| {
        matches!(e, RelayEvent::Lag(_))
    })
    .await;
    let RelayEvent::Lag(backlog) = lag else {
        unreachable!()
    };
    assert!(backlog >= 10, "lag at {backlog}");
    slow.close().await;
    publisher.close().await;
}

pub async fn expired_nodes_are_swept_with_their_subscriptions<S: Store>() {
    let store = S::isolated().await;
    let b = backend(&store).await;
    let ns = RelayId::new("namespace", "sweep").unwrap();
    let id = RelayId::new("node_id", "short-lived").unwrap();
    let gone = b.relay_handle(&ns, Some(&id));
    gone.relay_register_node(
        &id,
        Duration::from_millis(300),
        &RelayNodeInfo::default(),
        10,
    )
    .await
    .unwrap();
    let endpoint = RelayId::new("endpoint", "e").unwrap();
    gone.relay_subscribe(&id, &endpoint, "a.b").await.unwrap();
    // Nothing sweeps before the sweeper starts: expired or not, the node is still there.
    assert_eq!(gone.relay_counts().await.unwrap().subscriptions, 1);

    let sweeper = Relay::new(
        &b,
        opts("sweep")
            .lease_duration(Duration::from_secs(10))
            .sweep_interval(Duration::from_millis(100)),
    )
    .await
    .unwrap();
    let mut events = sweeper.events();
    let swept = next_event(
        &mut events,
        "the expired node swept",
        WAIT,
        |e| matches!(e, RelayEvent::Swept(ids) if ids.contains(&"short-lived".to_owned())),
    )
    .await;
    assert!(matches!(swept, RelayEvent::Swept(_)));
    assert!(
        !gone
            .relay_heartbeat(&id, Duration::from_secs(1))
            .await
            .unwrap()
    );
    eventually("its subscriptions pruned", WAIT, || async {
        sweeper.counts().await.unwrap().subscriptions == 0
    })
    .await;
    let counts = sweeper.counts().await.unwrap();
    assert_eq!((counts.nodes, counts.patterns), (1, 0));
    let err = gone
        .relay_subscribe(&id, &endpoint, "a.b")
        .await
        .unwrap_err();
    assert_refused(&err, RelayErrorCode::NodeNotRegistered);
    sweeper.close().await;
}

pub async fn a_node_that_lost_its_lease_recovers_its_subscriptions<S: Store>() {
    let store = S::isolated().await;
    let b = backend(&store).await;
    let node = Relay::new(
        &b,
        opts("recover").heartbeat_interval(Duration::from_millis(100)),
    )
    .await
    .unwrap();
    let publisher = Relay::new(&b, opts("recover")).await.unwrap();
    let mut events = node.events();
    let (inbox, _s) = subscribed(&node, "alerts.*").await;
    publisher.publish("alerts.disk", &1, None).await.unwrap();
    received(&inbox, 1).await;

    // Another node sees it gone (as after a sweep): the next heartbeat finds out.
    let ns = RelayId::new("namespace", "recover").unwrap();
    let id = RelayId::new("node_id", node.node_id()).unwrap();
    assert!(
        b.relay_handle(&ns, None)
            .relay_unregister_node(&id)
            .await
            .unwrap()
    );
    next_event(&mut events, "recovered", WAIT, |e| {
        matches!(e, RelayEvent::Recovered)
    })
    .await;
    let sent = publisher.publish("alerts.cpu", &2, None).await.unwrap();
    assert_eq!(sent.endpoints, 1, "the subscription is back");
    let got = received(&inbox, 2).await;
    assert_eq!(got[1].mid, sent.mid);
    node.close().await;
    publisher.close().await;
}

pub async fn bad_topics_and_options_are_refused_naming_the_fault<S: Store>() {
    let store = S::isolated().await;
    let b = backend(&store).await;
    let err = Relay::new(&b, opts("bad").node_id("no spaces"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("node_id"), "{err}");
    let node = Relay::new(&b, opts("bad")).await.unwrap();
    let err = node.publish("a.*", &1, None).await.unwrap_err();
    assert!(err.to_string().contains("wildcard"), "{err}");
    let err = node
        .subscribe("a.>.b", collect(&Inbox::default()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("last segment"), "{err}");
    let err = node
        .publish("big", &"x".repeat(600 * 1024), None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("max_message_size"), "{err}");
    // The store's own grammar agrees: what gets past ours is refused with upstream's code.
    let handle = b.relay_handle(&RelayId::new("namespace", "bad").unwrap(), None);
    let args = bullmq::relay::RelayPublishArgs {
        ts: 1,
        retain_ms: 0,
        max_size: 10,
    };
    let err = handle.relay_publish("a..b", "1", args).await.unwrap_err();
    assert_refused(&err, RelayErrorCode::InvalidTopic);
    let err = handle
        .relay_publish("a.b", "12345678901", args)
        .await
        .unwrap_err();
    assert_refused(&err, RelayErrorCode::DataTooLarge);
    node.close().await;
    let err = node.publish("a", &1, None).await.unwrap_err();
    assert!(matches!(err, bullmq::Error::Closed(_)), "{err}");
}

/// The node's inbox connection killed (`CLIENT KILL` on Redis, `pg_terminate_backend` of the
/// `LISTEN` connection on PostgreSQL): the node opens a new one (named again) and reads on
/// from its cursor, every message published meanwhile delivered once, in order.
pub async fn a_killed_inbox_connection_loses_and_repeats_nothing<S: Store>() {
    let store = S::isolated().await;
    let b = backend(&store).await;
    let node = Relay::new(&b, opts("killed")).await.unwrap();
    let publisher = Relay::new(&b, opts("killed")).await.unwrap();
    let (got, _sub) = subscribed(&node, "k.>").await;
    let mut sent = vec![publisher.publish("k.0", &0, None).await.unwrap().mid];
    received(&got, 1).await;
    // Its inbox connection, as the store sees it (blocked in `XREAD`, or `LISTEN`ing).
    eventually("the named inbox connection", WAIT, || async {
        node.node_connections(None).await.unwrap().len() == 1
    })
    .await;
    let inbox = node.node_connections(None).await.unwrap();
    assert_eq!(store.kill_connection(&inbox[0].address).await, 1);
    for i in 1..=5 {
        sent.push(publisher.publish("k.n", &i, None).await.unwrap().mid);
    }
    received(&got, sent.len()).await;
    // A late duplicate would show up here.
    sent.push(publisher.publish("k.last", &6, None).await.unwrap().mid);
    received(&got, sent.len()).await;
    let mids: Vec<String> = got.lock().unwrap().iter().map(|m| m.mid.clone()).collect();
    assert_eq!(mids, sent, "each once, in order");
    eventually("a new named inbox connection", WAIT, || async {
        let now = node.node_connections(None).await.unwrap();
        now.len() == 1 && now[0].address != inbox[0].address
    })
    .await;
    node.close().await;
    publisher.close().await;
}

/// An interrupt (a relay closing) that lands while a read is between its first look at the
/// inbox and its blocking wait ends that read at once, rather than after one block timeout.
pub async fn an_interrupt_during_a_read_ends_it_at_once<S: Store>() {
    let store = S::isolated().await;
    let id = RelayId::new("node_id", "reader").unwrap();
    let reader = backend(&store).await.relay_handle(
        &RelayId::new("namespace", "interrupted").unwrap(),
        Some(&id),
    );
    let lease = Duration::from_secs(30);
    reader
        .relay_register_node(&id, lease, &RelayNodeInfo::default(), 100)
        .await
        .unwrap();
    let block = Duration::from_secs(10);
    let started = std::time::Instant::now();
    // Polled in order: the read is at its first (non-blocking) look at the empty inbox, a
    // round trip in flight, when the interrupt runs to its end.
    let (read, ()) = tokio::join!(
        reader.relay_read_inbox(&id, reader.relay_initial_cursor(), block, 100),
        reader.relay_interrupt_inbox(),
    );
    let batch = read.unwrap();
    assert!(batch.entries.is_empty());
    assert!(
        started.elapsed() < block / 2,
        "the read waited {:?} after the interrupt",
        started.elapsed()
    );
    let _ = reader.relay_unregister_node(&id).await;
}
