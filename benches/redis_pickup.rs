//! Pickup latency on Redis: how long after a job is added an idle worker starts it, at fixed
//! offered loads.
//!
//! `benches/node/pickup.mjs` (Node.js BullMQ 6.7.6) runs the same modes and prints the same
//! JSON lines; `benches/compare-pickup.sh` runs both against one Redis and prints them side by
//! side.
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

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bullmq::Prefix;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, CancellationToken, JobOptions, ProcessResult, Queue, Worker, WorkerOptions,
};
use serde::{Deserialize, Serialize};

use ours::queue_name;
use support::cli::{Args, env_u64, redis_url, runtime};
use support::measure::{admin, delete_prefix, unique_prefix};

/// The offered loads, jobs per second.
const RATES: [u64; 3] = [100, 1_000, 10_000];
/// The worker's concurrency.
const CONCURRENCY: usize = 10;

/// A job's data: when its add was sent.
#[derive(Serialize, Deserialize)]
struct Sent {
    /// Wall clock, µs since the Unix epoch.
    t: u64,
}

fn now_us() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    u64::try_from(since.as_micros()).expect("µs fit in u64")
}

async fn backend(url: &str, prefix: &str) -> RedisBackend {
    let options = RedisOptions::new(url.to_owned()).prefix(Prefix::new(prefix).expect("prefix"));
    RedisBackend::connect(&options, queue_name())
        .await
        .expect("connect")
}

/// Offers `jobs` jobs at `rate` per second through `queue`; returns the seconds it took.
async fn offer(queue: &Arc<Queue<RedisBackend>>, rate: u64, jobs: u64) -> f64 {
    let start = Instant::now();
    let mut adds = tokio::task::JoinSet::new();
    for k in 0..jobs {
        let due = start + Duration::from_micros(k * 1_000_000 / rate);
        tokio::time::sleep_until(due.into()).await;
        let queue = Arc::clone(queue);
        adds.spawn(async move {
            queue
                .add("pickup", &Sent { t: now_us() }, JobOptions::new())
                .await
                .expect("add");
        });
    }
    let secs = start.elapsed().as_secs_f64();
    while let Some(added) = adds.join_next().await {
        added.expect("add task");
    }
    secs
}

/// The `q`-quantile of sorted `v`, in ms.
fn quantile_ms(v: &[u64], q: f64) -> f64 {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    #[allow(clippy::cast_precision_loss)]
    let ms = v[i] as f64 / 1_000.0;
    ms
}

/// One mode: prints its JSON line.
async fn measure(url: &str, rate: u64, jobs: u64, warmup: u64) {
    let prefix = unique_prefix("bench-pickup-rs", &format!("rate{rate}"));
    let latencies = Arc::new(Mutex::new(Vec::<u64>::with_capacity(
        usize::try_from(jobs + warmup).expect("jobs fit in memory"),
    )));
    let seen = Arc::clone(&latencies);
    let worker = Worker::new(
        queue_name(),
        backend(url, &prefix).await,
        WorkerOptions::new().concurrency(CONCURRENCY),
        move |job: ActiveJob<RedisBackend>, _cancel: CancellationToken| {
            let started = now_us();
            let sent: Sent = serde_json::from_str(&job.data).expect("the bench's data");
            seen.lock()
                .expect("latencies")
                .push(started.saturating_sub(sent.t));
            async { ProcessResult::Ok(serde_json::Value::Null) }
        },
    )
    .await
    .expect("the worker");
    let queue = Arc::new(
        Queue::try_new(queue_name(), backend(url, &prefix).await)
            .expect("the backend is bound to this queue"),
    );
    // Idle first: the worker has found the queue empty and waits on its marker.
    tokio::time::sleep(Duration::from_millis(300)).await;
    offer(&queue, rate, warmup).await;
    wait_for(&latencies, warmup).await;
    latencies.lock().expect("latencies").clear();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let secs = offer(&queue, rate, jobs).await;
    wait_for(&latencies, jobs).await;
    worker.close().await;
    let mut v = std::mem::take(&mut *latencies.lock().expect("latencies"));
    v.sort_unstable();
    delete_prefix(&mut admin(url).await, &prefix).await;
    #[allow(clippy::cast_precision_loss)]
    let achieved = jobs as f64 / secs;
    println!(
        r#"{{"impl":"bullmq-rs","mode":"rate{rate}-c{CONCURRENCY}","jobs":{jobs},"offered_per_sec":{rate},"achieved_per_sec":{achieved:.1},"p50_ms":{:.3},"p99_ms":{:.3},"p999_ms":{:.3},"max_ms":{:.3}}}"#,
        quantile_ms(&v, 0.5),
        quantile_ms(&v, 0.99),
        quantile_ms(&v, 0.999),
        quantile_ms(&v, 1.0),
    );
}

/// Waits until `n` latencies have been recorded.
async fn wait_for(latencies: &Mutex<Vec<u64>>, n: u64) {
    let n = usize::try_from(n).expect("jobs fit in memory");
    while latencies.lock().expect("latencies").len() < n {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn main() {
    let args = Args::parse();
    let rates: Vec<u64> = if args.modes.is_empty() {
        RATES.to_vec()
    } else {
        args.modes
            .iter()
            .map(|m| {
                m.strip_prefix("rate")
                    .and_then(|r| r.strip_suffix(&format!("-c{CONCURRENCY}")))
                    .and_then(|r| r.parse().ok())
                    .unwrap_or_else(|| panic!("unknown mode {m:?}: rate{{100,1000,10000}}-c10"))
            })
            .collect()
    };
    let secs = env_u64("BENCH_SECS", 3);
    let url = redis_url();
    runtime(false).block_on(async {
        for rate in rates {
            let (jobs, warmup) = if args.test {
                (100, 0)
            } else {
                (rate * secs, rate.min(1_000))
            };
            measure(&url, rate, jobs, warmup).await;
        }
    });
}
