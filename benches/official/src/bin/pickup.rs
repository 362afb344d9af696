//! Pickup latency of the official Rust port, `bullmq-official` 1.2.5: how long after a job is
//! added an idle worker starts it, at fixed offered loads. The same modes, pacing, measurement
//! and JSON lines (`"impl":"bullmq-official"`) as `benches/redis_pickup.rs` (ours) and
//! `benches/node/pickup.mjs` (Node.js BullMQ 6.7.6), all but the worker and the add being the
//! shared `benches/support/pickup.rs`, so that `benches/compare-pickup.sh` can set the three
//! side by side.
//!
//! Modes `rate{100,1000,10000}-c10`: a `Worker` at concurrency 10 (started at once, the port's
//! default `autorun`) waits on an empty queue, then one `Queue` in the same process adds jobs
//! one at a time at the offered rate, each add spawned at its due time without waiting for the
//! previous one's reply. Each job's data holds the wall clock (µs) just before its add was
//! sent; the processor records the difference from its own start. Per mode: median, p99 and
//! p99.9 over `rate × BENCH_SECS` jobs, after a second's worth (at most 1,000) of unmeasured
//! ones.
//!
//! Where the port differs, the nearest equivalent is measured:
//!
//! - its idle worker waits with one `BZPOPMIN` on the marker key for `drainDelay` (5 s, the
//!   default kept), its single fetch driver then running `moveToActive` once per job and
//!   handing each to a task of its own; ours and Node's wait on the marker too. The latency is
//!   the same span: the add's trip, the wake-up, the fetch and the processor's start;
//! - its worker queues its events on an unbounded channel; like a user who does not listen,
//!   the harness never reads them (they cost memory, not latency);
//! - closing waits at most 200 ms (every measured job has started and returned by then): the
//!   port's close would otherwise wait out its pending `BZPOPMIN`.
//!
//! Usage: `cargo run --release --manifest-path benches/official/Cargo.toml --bin pickup --
//! [--mode NAME[,NAME]] [--test]` (`--test`: 100 jobs per mode, no warm-up). Env: `BENCH_SECS`
//! (3), `REDIS_URL` (`redis://127.0.0.1:6379`). Wall-clock figures: run it on a quiet machine.

use std::sync::Arc;

use bullmq::options::RedisConnectionOptions;
use bullmq::worker::CancellationToken;
use bullmq::{Job, Queue, QueueOptions, Worker, WorkerOptions};
use bullmq_official_bench::jobs::QUEUE;
use bullmq_official_bench::measure::{admin, delete_prefix, unique_prefix};
use bullmq_official_bench::pickup::{
    self, CONCURRENCY, JOB_NAME, Latencies, Run, Sent, line, now_us, offered,
};
use serde::Deserialize;

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-official";
/// The first part of every key prefix.
const HARNESS: &str = "bench-pickup-of";

fn connection(url: &str) -> RedisConnectionOptions {
    RedisConnectionOptions {
        url: url.to_owned(),
        ..RedisConnectionOptions::default()
    }
}

/// One mode: prints its JSON line.
async fn measure(url: String, run: Run) {
    let url = url.as_str();
    let prefix = unique_prefix(HARNESS, &format!("rate{}", run.rate));
    let latencies = Latencies::default();
    let seen = latencies.clone();
    let options = WorkerOptions::new()
        .connection(connection(url))
        .prefix(&prefix)
        .concurrency(CONCURRENCY);
    let worker = Worker::with_options(
        QUEUE,
        move |job: Job, _cancel: CancellationToken| {
            let started = now_us();
            let sent = Sent::deserialize(job.data()).expect("the bench's data");
            seen.record(started, &sent);
            async { Ok(serde_json::Value::Null) }
        },
        options,
    )
    .await
    .expect("the worker");
    let options = QueueOptions::new()
        .connection(connection(url))
        .prefix(&prefix);
    let queue = Arc::new(
        Queue::with_options(QUEUE, options)
            .await
            .expect("connect the queue"),
    );
    let secs = offered(run, &latencies, || {
        let queue = Arc::clone(&queue);
        async move {
            queue.add(JOB_NAME, Sent::now()).await.expect("add");
        }
    })
    .await;
    worker.close(200).await.expect("close the worker");
    delete_prefix(&mut admin(url).await, &prefix).await;
    println!("{}", line(IMPL, run, secs, &latencies.sorted()));
}

fn main() {
    pickup::main(measure);
}
