//! Add throughput of the official Rust port, `bullmq-official` 1.2.5: the same three modes,
//! the same jobs and the same JSON lines as `benches/redis_add.rs` (ours) and
//! `benches/node/add.mjs` (Node.js BullMQ 6.7.6), so that `benches/compare-add.sh` can set
//! them side by side.
//!
//! Modes: `sequential` (one awaited `add` at a time), `concurrent8` (8 tasks sharing one
//! queue and its connection), `bulk1000` (`add_bulk` in chunks of 1,000, one chunk at a time).
//! Each mode runs on a fresh, unique key prefix, after an unmeasured warm-up on another one;
//! the keys are deleted afterwards.
//!
//! Usage: `bullmq-official-bench [--mode NAME]... [--test]`; env `BENCH_JOBS` (20,000),
//! `BENCH_WARMUP` (2,000), `REDIS_URL` (`redis://127.0.0.1:6379`), `BENCH_RUNTIME`
//! (`multi_thread`, the default, or `current_thread`), `BENCH_TASK` (`spawn`: run each mode
//! in a spawned task, on a runtime worker, instead of in `block_on` on the main thread as
//! `#[tokio::main]` does).

use std::sync::Arc;

use bullmq::options::RedisConnectionOptions;
use bullmq::{BulkJob, Queue, QueueOptions};
use bullmq_official_bench::add::{Config, Mode, concurrently, finish};
use bullmq_official_bench::cli::runtime;
use bullmq_official_bench::jobs::{CHUNK, Data, JOB_NAME, QUEUE};
use bullmq_official_bench::measure::{Meter, admin, delete_prefix, unique_prefix};
use redis::aio::MultiplexedConnection;

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-official";
/// The first part of every key prefix.
const HARNESS: &str = "bench-add-of";

async fn queue(config: &Config, prefix: &str) -> Queue {
    let connection = RedisConnectionOptions {
        url: config.run.url.clone(),
        ..RedisConnectionOptions::default()
    };
    let options = QueueOptions::new().connection(connection).prefix(prefix);
    Queue::with_options(QUEUE, options)
        .await
        .expect("connect the queue")
}

/// Adds `jobs` jobs in `mode`.
async fn run(queue: Queue, mode: Mode, jobs: u64) {
    match mode {
        Mode::Sequential => {
            for i in 0..jobs {
                queue.add(JOB_NAME, Data::new(i)).await.expect("add");
            }
        }
        Mode::Concurrent8 => {
            let queue = Arc::new(queue);
            concurrently(jobs, move |i| {
                let queue = Arc::clone(&queue);
                async move {
                    queue.add(JOB_NAME, Data::new(i)).await.expect("add");
                }
            })
            .await;
        }
        Mode::Bulk1000 => {
            let mut start = 0;
            while start < jobs {
                let end = (start + CHUNK).min(jobs);
                let chunk = (start..end)
                    .map(|i| BulkJob::new(JOB_NAME, Data::new(i)))
                    .collect();
                queue.add_bulk(chunk).await.expect("add_bulk");
                start = end;
            }
        }
    }
}

/// One measured mode: prints its JSON line.
async fn measure(config: &Config, admin: &mut MultiplexedConnection, mode: Mode) {
    if config.run.warmup > 0 {
        let prefix = unique_prefix(HARNESS, "warmup");
        run(queue(config, &prefix).await, mode, config.run.warmup).await;
        delete_prefix(admin, &prefix).await;
    }
    let prefix = unique_prefix(HARNESS, mode.name());
    let q = queue(config, &prefix).await;
    let meter = Meter::start(admin).await;
    config.placement.run(run(q, mode, config.run.jobs)).await;
    finish(admin, meter, IMPL, &prefix, mode, config.run.jobs).await;
}

fn main() {
    let config = Config::from_env();
    runtime(config.placement.current_thread).block_on(async {
        let mut admin = admin(&config.run.url).await;
        for &mode in &config.run.modes {
            measure(&config, &mut admin, mode).await;
        }
    });
}
