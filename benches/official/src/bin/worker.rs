//! Worker throughput of the official Rust port, `bullmq-official` 1.2.5: the same modes, the
//! same jobs, the same measurement and the same JSON lines as `benches/redis_worker.rs` (ours)
//! and `benches/node/worker.mjs` (Node.js BullMQ 6.7.6), so that `benches/compare-worker.sh`
//! can set them side by side.
//!
//! The port's worker queues its events on an unbounded channel; like a user who does not
//! listen, the harness never reads them.
//!
//! Modes (`instant-c{1,10,100,500}-{keep,remove}`, `sleep10ms-c100`): jobs whose processor
//! returns at once, at concurrency 1, 10, 100 and 500, with `removeOnComplete` false (`keep`)
//! or true (`remove`, a job option); and jobs whose processor sleeps 10 ms, at concurrency 100
//! (kept). For each mode, on a fresh, unique key prefix (after an unmeasured warm-up on
//! another one):
//!
//! 1. the jobs are added with `add_bulk` in chunks of 1,000 (not timed);
//! 2. a worker is built with `autorun` off (its connection made, not timed);
//! 3. the clock starts and the worker runs; every 2 ms a separate connection asks for the
//!    lengths of the `wait` and `active` lists, and the clock stops when both are empty (every
//!    job finished: a job is in one of them from its add until its finishing move);
//! 4. the completed (and failed) counts are checked, the worker closed and the keys deleted.
//!
//! It prints one line per mode:
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"instant-c10-keep","jobs":20000,"concurrency":10,"secs":..,
//!  "jobs_per_sec":..,"client_cpu_us_per_job":..,"redis_cpu_us_per_job":..,"peak_rss_kb":..}
//! ```
//!
//! - client CPU: this process's CPU clock, `CLOCK_PROCESS_CPUTIME_ID`, over the timed part
//!   (the 2 ms polling included, the same in the three harnesses);
//! - Redis CPU: `used_cpu_sys + used_cpu_user` of `INFO cpu`, before and after. Redis is
//!   shared, so anything else it serves meanwhile counts too;
//! - peak RSS: `VmHWM` of `/proc/self/status` after the run, the high-water mark having been
//!   reset (`5` written to `/proc/self/clear_refs`) just before the clock started, so that
//!   the pre-filling does not count: the whole process's peak while its worker ran.
//!
//! Usage: `cargo run --release --manifest-path benches/official/Cargo.toml --bin worker --
//! [--mode NAME[,NAME]]... [--test]` (`--test`: 200 jobs per mode, no warm-up). Env: `BENCH_JOBS` (20,000),
//! `BENCH_WARMUP` (2,000), `REDIS_URL` (`redis://127.0.0.1:6379`).

use std::sync::Arc;
use std::time::Duration;

use bullmq::options::RedisConnectionOptions;
use bullmq::types::RemoveOnFinish;
use bullmq::worker::CancellationToken;
use bullmq::{BulkJob, Job, JobOptions, Queue, QueueOptions, Worker, WorkerOptions};
use bullmq_official_bench::cli::{Settings, runtime};
use bullmq_official_bench::instructions::{self, Finish, Step};
use bullmq_official_bench::jobs::{CHUNK, Data, JOB_NAME, QUEUE};
use bullmq_official_bench::measure::{Meter, admin, delete_prefix, reset_peak_rss, unique_prefix};
use bullmq_official_bench::worker::{Mode, Run, check_finished, drain, line};
use redis::aio::MultiplexedConnection;

/// Which implementation these lines are about.
const IMPL: &str = "bullmq-official";
/// The first part of every key prefix.
const HARNESS: &str = "bench-worker-of";

fn connection(config: &Settings<Mode>) -> RedisConnectionOptions {
    RedisConnectionOptions {
        url: config.url.clone(),
        ..RedisConnectionOptions::default()
    }
}

/// Adds `jobs` jobs under `prefix`, `add_bulk` in chunks.
async fn fill(config: &Settings<Mode>, prefix: &str, mode: Mode, jobs: u64) {
    let options = QueueOptions::new()
        .connection(connection(config))
        .prefix(prefix);
    let queue = Queue::with_options(QUEUE, options)
        .await
        .expect("connect the queue");
    let opts = if mode.remove {
        JobOptions::new().remove_on_complete(RemoveOnFinish::Bool(true))
    } else {
        JobOptions::new()
    };
    let mut start = 0;
    while start < jobs {
        let end = (start + CHUNK).min(jobs);
        let chunk = (start..end)
            .map(|i| BulkJob::with_options(JOB_NAME, Data::new(i), opts.clone()))
            .collect();
        queue.add_bulk(chunk).await.expect("add_bulk");
        start = end;
    }
}

/// The worker of `mode` under `prefix`, not running yet: its processor sleeps the mode's work,
/// or returns at once (telling `finish` first, when given).
async fn worker(
    config: &Settings<Mode>,
    prefix: &str,
    mode: Mode,
    finish: Option<Arc<Finish>>,
) -> Worker {
    let work = Duration::from_millis(mode.work_ms);
    let options = WorkerOptions::new()
        .connection(connection(config))
        .prefix(prefix)
        .concurrency(mode.concurrency)
        .autorun(false);
    Worker::with_options(
        QUEUE,
        move |_job: Job, _cancel: CancellationToken| {
            if let Some(finish) = &finish {
                finish.processed();
            }
            async move {
                if !work.is_zero() {
                    tokio::time::sleep(work).await;
                }
                Ok(serde_json::Value::Null)
            }
        },
        options,
    )
    .await
    .expect("the worker")
}

/// Pre-fills `jobs` jobs under `prefix`, then times a worker processing them all.
async fn run(
    config: &Settings<Mode>,
    admin: &mut MultiplexedConnection,
    prefix: &str,
    mode: Mode,
    jobs: u64,
) -> Run {
    fill(config, prefix, mode, jobs).await;
    let worker = worker(config, prefix, mode, None).await;
    let rss_reset = reset_peak_rss();
    let meter = Meter::start(admin).await;
    worker.run().await.expect("run the worker");
    let measured = drain(admin, prefix, meter, rss_reset).await;
    // Every job is finished by now; the timeout only cuts short the port's wait for its
    // blocking fetch, which would otherwise last the whole drain delay (5 s).
    worker.close(200).await.expect("close the worker");
    check_finished(admin, prefix, mode, jobs).await;
    measured
}

/// One measured mode: prints its JSON line.
async fn measure(config: &Settings<Mode>, admin: &mut MultiplexedConnection, mode: Mode) {
    if config.warmup > 0 {
        let prefix = unique_prefix(HARNESS, "warmup");
        run(config, admin, &prefix, mode, config.warmup).await;
        delete_prefix(admin, &prefix).await;
    }
    let prefix = unique_prefix(HARNESS, &mode.name());
    let r = run(config, admin, &prefix, mode, config.jobs).await;
    delete_prefix(admin, &prefix).await;
    println!("{}", line(IMPL, mode, config.jobs, &r));
}

/// A child of ours's instruction count (`benches/support/instructions.rs`): fills the queue
/// under `prefix`, or works through it.
async fn counted_child(config: &Settings<Mode>, step: Step, prefix: &str) {
    let mode = config.modes[0];
    match step {
        Step::Fill => fill(config, prefix, mode, config.jobs).await,
        Step::Work => {
            let finish = Finish::new(config.jobs);
            let worker = worker(config, prefix, mode, Some(Arc::clone(&finish))).await;
            worker.run().await.expect("run the worker");
            finish.wait().await;
            worker.close(200).await.expect("close the worker");
        }
    }
}

fn main() {
    let config = Settings::from_env(&Mode::ALL, Mode::parse);
    if let Some((step, prefix)) = instructions::child() {
        runtime(false).block_on(counted_child(&config, step, &prefix));
        return;
    }
    runtime(false).block_on(async {
        let mut admin = admin(&config.url).await;
        for &mode in &config.modes {
            measure(&config, &mut admin, mode).await;
        }
    });
}
