//! Pickup latency on Redis: how long after a job is added an idle worker starts it, at fixed
//! offered loads.
//!
//! `benches/node/pickup.mjs` (Node.js BullMQ 6.7.6) and `benches/official/src/bin/pickup.rs`
//! (the official Rust port) run the same modes and print the same JSON lines;
//! `benches/compare-pickup.sh` runs the three against one Redis and prints them side by side.
//! The modes, pacing, latencies and line are `benches/support/pickup.rs`, shared with the
//! official port's harness.
//!
//! Modes `rate{100,1000,10000}-c10`: a worker at concurrency 10 waits on an empty queue (its
//! marker wait), then one producer in the same process adds jobs one at a time at the offered
//! rate, each add started at its due time (`start + k / rate`, late adds sent at once, never
//! skipped) without waiting for the previous one's reply. Each job's data holds the wall clock
//! (µs) just before its add was sent; the processor reads it and records the difference from
//! its own start: the latency covers the add's trip to Redis, the worker's wake-up, its
//! `moveToActive` and the reply. Per mode the line gives the median, p99 and p99.9 over
//! `rate × BENCH_SECS` jobs (after as many unmeasured jobs as a second's worth, at most
//! 1,000, to warm up):
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"rate1000-c10","jobs":3000,"offered_per_sec":1000,
//!  "achieved_per_sec":..,"p50_ms":..,"p99_ms":..,"p999_ms":..,"max_ms":..}
//! ```
//!
//! Run with `cargo bench --bench redis_pickup [-- --mode NAME[,NAME]]`; `-- --test` (smoke run)
//! offers 100 jobs per mode. Env: `BENCH_SECS` (3), `REDIS_URL`. Wall-clock figures: run it on
//! a quiet machine.

#[path = "support/mod.rs"]
mod support;

#[path = "support/ours.rs"]
mod ours;

use std::sync::Arc;

use bullmq::Prefix;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, CancellationToken, JobOptions, ProcessResult, Queue, Worker, WorkerOptions,
};

use ours::queue_name;
use support::measure::{admin, delete_prefix, unique_prefix};
use support::pickup::{CONCURRENCY, JOB_NAME, Latencies, Run, Sent, line, now_us, offered};

async fn backend(url: &str, prefix: &str) -> RedisBackend {
    let options = RedisOptions::new(url.to_owned()).prefix(Prefix::new(prefix).expect("prefix"));
    RedisBackend::connect(&options, queue_name())
        .await
        .expect("connect")
}

/// One mode: prints its JSON line.
async fn measure(url: String, run: Run) {
    let url = url.as_str();
    let prefix = unique_prefix("bench-pickup-rs", &format!("rate{}", run.rate));
    let latencies = Latencies::default();
    let seen = latencies.clone();
    let worker = Worker::new(
        queue_name(),
        backend(url, &prefix).await,
        WorkerOptions::new().concurrency(CONCURRENCY),
        move |job: ActiveJob<RedisBackend>, _cancel: CancellationToken| {
            let started = now_us();
            let sent: Sent = serde_json::from_str(&job.data).expect("the bench's data");
            seen.record(started, &sent);
            async { ProcessResult::Ok(serde_json::Value::Null) }
        },
    )
    .await
    .expect("the worker");
    let queue = Arc::new(
        Queue::try_new(queue_name(), backend(url, &prefix).await)
            .expect("the backend is bound to this queue"),
    );
    let secs = offered(run, &latencies, || {
        let queue = Arc::clone(&queue);
        async move {
            queue
                .add(JOB_NAME, &Sent::now(), JobOptions::new())
                .await
                .expect("add");
        }
    })
    .await;
    worker.close().await;
    delete_prefix(&mut admin(url).await, &prefix).await;
    println!("{}", line("bullmq-rs", run, secs, &latencies.sorted()));
}

fn main() {
    support::pickup::main(measure);
}
