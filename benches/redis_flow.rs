//! Flow creation on Redis: 1,000 flows of a parent with 10 children, added one awaited
//! `FlowProducer::add` at a time (`sequential`) and 100 trees per `add_bulk` (`bulk100`).
//!
//! `benches/node/flow.mjs` runs the same modes with Node.js BullMQ 6.7.6's `FlowProducer`;
//! `benches/compare-flow.sh` runs both on the same Redis and prints the ratio. Each mode runs
//! on a fresh key prefix (deleted afterwards) after an unmeasured warm-up, checks the job
//! count, and prints one JSON line:
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"sequential","flows":1000,"jobs":11000,"secs":..,"flows_per_sec":..}
//! ```
//!
//! `cargo bench --bench redis_flow --features flow [-- --mode NAME]`; `-- --test` (CI's smoke
//! run) adds 20 flows per mode without warm-up. Env: `BENCH_FLOWS` (1,000), `REDIS_URL`.

#[path = "support/mod.rs"]
mod support;

#[path = "support/ours.rs"]
mod ours;

use std::time::Instant;

use bullmq::QueueName;
use bullmq::flow::{FlowJob, FlowProducer};
use serde_json::json;

use support::cli::Args;
use support::measure::{admin, delete_prefix};

const CHILDREN: usize = 10;
const BULK: usize = 100;

fn tree(i: usize) -> FlowJob {
    let q = |n: &str| QueueName::new(n).expect("queue name");
    FlowJob::new(
        q("bench-parents"),
        "parent",
        json!({"i": i, "payload": "parent job"}),
    )
    .children(
        (0..CHILDREN).map(|c| FlowJob::new(q("bench-children"), "child", json!({"i": i, "c": c}))),
    )
}

async fn run(url: &str, mode: &str, flows: usize) -> serde_json::Value {
    let (prefix, backend) = ours::fresh_redis(url, "bench-flow", "bench-parents").await;
    let producer = FlowProducer::new(backend);
    let start = Instant::now();
    match mode {
        "sequential" => {
            for i in 0..flows {
                producer.add(tree(i)).await.expect("add a flow");
            }
        }
        "bulk100" => {
            for chunk in (0..flows).collect::<Vec<_>>().chunks(BULK) {
                producer
                    .add_bulk(chunk.iter().map(|i| tree(*i)).collect())
                    .await
                    .expect("add flows");
            }
        }
        other => panic!("unknown mode {other} (sequential, bulk100)"),
    }
    let secs = start.elapsed().as_secs_f64();
    let mut con = admin(url).await;
    let waiting: usize = redis::cmd("LLEN")
        .arg(format!("{prefix}:bench-children:wait"))
        .query_async(&mut con)
        .await
        .expect("LLEN");
    assert_eq!(waiting, flows * CHILDREN, "every child was added");
    delete_prefix(&mut con, &prefix).await;
    json!({
        "impl": "bullmq-rs", "mode": mode, "flows": flows, "jobs": flows * (CHILDREN + 1),
        "secs": secs, "flows_per_sec": f64::from(u32::try_from(flows).unwrap_or(u32::MAX)) / secs,
    })
}

fn main() {
    Args::parse().time_each_mode("BENCH_FLOWS", &["sequential", "bulk100"], &run);
}
