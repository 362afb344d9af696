//! The relay (issue 28): one publisher and N subscribing nodes (1, 10, 100 by default) in one
//! process, each node with one subscription matching every message. Printed per N: publishes
//! per second (one publisher, one call at a time), deliveries per second (messages times
//! nodes over the time until the last one arrived), and publish-to-delivery latency (p50,
//! p99; from just before the publish call to the handler, on one clock).
//!
//! `benches/node/relay.mjs` (Node.js BullMQ 6.7.6) measures the same on the same store:
//! `node benches/node/relay.mjs` beside `cargo bench --bench relay`.
//!
//! ```text
//! {"impl":"bullmq-rs","store":"redis","nodes":10,"messages":2000,"publish_per_sec":..,
//!  "deliveries_per_sec":..,"p50_ms":..,"p99_ms":..}
//! ```
//!
//! Run: `cargo bench --bench relay --features postgres [-- --store redis|postgres]
//! [--nodes 1,10,100] [--messages N]`; `-- --test` is a smoke run (1 and 2 nodes, 50
//! messages). Env: `REDIS_URL`, `DATABASE_URL`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bullmq::backend::Backend;
use bullmq::relay::{Relay, RelayMessage, RelayOptions};
use bullmq::{Prefix, QueueName};

/// Publish instants by message index, and the latencies seen so far.
#[derive(Default)]
struct Clock {
    sent: Vec<Option<Instant>>,
    latencies: Vec<Duration>,
    last: Option<Instant>,
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let i = (((sorted.len() - 1) as f64) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

async fn run<B: Backend>(backend: &B, store: &str, nodes: usize, messages: usize, ns: &str) {
    let opts = || {
        RelayOptions::new()
            .namespace(ns)
            .block_timeout(Duration::from_secs(1))
    };
    let clock = Arc::new(Mutex::new(Clock {
        sent: vec![None; messages],
        ..Clock::default()
    }));
    let mut subscribers = Vec::with_capacity(nodes);
    let mut subscriptions = Vec::with_capacity(nodes);
    for _ in 0..nodes {
        let relay = Relay::new(backend, opts())
            .await
            .expect("a subscribing node");
        let sink = Arc::clone(&clock);
        let sub = relay
            .subscribe("bench.>", move |m: RelayMessage<usize>| {
                let now = Instant::now();
                let mut c = sink
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(Some(at)) = c.sent.get(m.data).copied() {
                    c.latencies.push(now - at);
                }
                c.last = Some(now);
            })
            .await
            .expect("subscribe");
        subscriptions.push(sub);
        subscribers.push(relay);
    }
    let publisher = Relay::new(backend, opts())
        .await
        .expect("the publishing node");
    let start = Instant::now();
    for i in 0..messages {
        clock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .sent[i] = Some(Instant::now());
        publisher
            .publish("bench.topic.x", &i, None)
            .await
            .expect("publish");
    }
    let published = start.elapsed();
    let expected = messages * nodes;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let seen = clock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .latencies
            .len();
        if seen >= expected || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let line = {
        let mut c = clock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let delivered = c.latencies.len();
        let until_last = c.last.map_or(published, |l| l - start);
        c.latencies.sort();
        serde_json::json!({
            "impl": "bullmq-rs",
            "store": store,
            "nodes": nodes,
            "messages": messages,
            "delivered": delivered,
            "publish_per_sec": (messages as f64 / published.as_secs_f64()).round() as u64,
            "deliveries_per_sec": (delivered as f64 / until_last.as_secs_f64()).round() as u64,
            "p50_ms": (percentile(&c.latencies, 0.5) * 100.0).round() / 100.0,
            "p99_ms": (percentile(&c.latencies, 0.99) * 100.0).round() / 100.0,
        })
    };
    println!("{line}");
    publisher.close().await;
    for relay in &subscribers {
        relay.close().await;
    }
}

fn main() {
    let smoke = std::env::args().any(|a| a == "--test");
    let store = arg("--store").unwrap_or_else(|| "redis".into());
    let nodes: Vec<usize> = if smoke {
        vec![1, 2]
    } else {
        arg("--nodes")
            .unwrap_or_else(|| "1,10,100".into())
            .split(',')
            .filter_map(|n| n.parse().ok())
            .collect()
    };
    let messages = if smoke {
        50
    } else {
        arg("--messages")
            .and_then(|m| m.parse().ok())
            .unwrap_or(2000)
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let queue = QueueName::new("relay-bench").expect("a queue name");
        let stamp = std::process::id();
        match store.as_str() {
            #[cfg(feature = "postgres")]
            "postgres" => {
                let url = std::env::var("DATABASE_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
                let options = bullmq::postgres::PostgresOptions::new(url).migrate(true);
                let backend = bullmq::postgres::PostgresBackend::connect(&options, queue)
                    .await
                    .expect("connect to PostgreSQL");
                for n in nodes {
                    run(
                        &backend,
                        "postgres",
                        n,
                        messages,
                        &format!("bench{stamp}n{n}"),
                    )
                    .await;
                }
            }
            _ => {
                let url =
                    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
                let prefix = Prefix::new(format!("bench-relay-{stamp}")).expect("a prefix");
                let options = bullmq::redis::RedisOptions::new(url).prefix(prefix);
                let backend = bullmq::redis::RedisBackend::connect(&options, queue)
                    .await
                    .expect("connect to Redis");
                for n in nodes {
                    run(&backend, "redis", n, messages, &format!("n{n}")).await;
                }
            }
        }
    });
}
