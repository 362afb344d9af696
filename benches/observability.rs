//! What observability costs: sequential `add` and a worker at concurrency 100, with every span
//! recorded by a subscriber (`registry`: tracing-subscriber's registry alone; `otel`: the
//! registry with the `tracing-opentelemetry` layer over an SDK tracer provider with no
//! exporter, each span built, sampled and dropped) versus no subscriber at all (`off`).
//!
//! Each run is a child process of this one (a global subscriber cannot be taken back), run in
//! interleaved rounds (the variants' order rotated each round) so that drift on a shared machine
//! falls on both alike. Each child prints one JSON line; the parent prints them, then per mode
//! the medians and ranges, and the overhead of the medians.
//!
//! Two measures:
//! - by default, throughput and the client's CPU clock per job, which the load of a shared
//!   machine blurs;
//! - with `--instructions`, the instructions the client executes per job, counted by valgrind
//!   (`--tool=callgrind`), which the machine's load does not change: each child runs under
//!   valgrind twice, with `BENCH_JOBS` and a fifth of them, the queue filled beforehand by this
//!   process, and the difference divided by the difference in jobs is the cost of one job
//!   (start-up, connection and script loading cancel out).
//!
//! Run: `cargo bench --features otel --bench observability [-- --instructions]` (without
//! `otel` no trace context is written into jobs, which costs a little less). `-- --test` is the
//! smoke run (200 jobs, one round). Env: `BENCH_JOBS` (5,000), `BENCH_ROUNDS` (7; 3 with
//! `--instructions`), `REDIS_URL` (use a private `redis-server --save ''`).

#[path = "support/mod.rs"]
mod support;

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{BulkJob, JobOptions, Prefix, Queue, QueueName, Worker, WorkerOptions};
use opentelemetry::trace::TracerProvider as _;
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

use support::cli::{Args, env_u64, redis_url};
use support::measure::{admin, delete_prefix, process_cpu, unique_prefix};

const MODES: [&str; 2] = ["add", "worker"];
/// `off`: no subscriber; `registry`: `tracing-subscriber`'s registry records every span (no
/// layer); `otel`: the registry with the `tracing-opentelemetry` layer, no exporter.
const VARIANTS: [&str; 3] = ["off", "registry", "otel"];

fn main() {
    let args = Args::parse();
    if let Ok(variant) = std::env::var("BENCH_OBS_CHILD") {
        let mode = std::env::var("BENCH_OBS_MODE").expect("mode");
        let jobs = env_u64("BENCH_JOBS", 5_000);
        child(&mode, &variant, jobs);
        return;
    }
    let jobs = if args.test {
        200
    } else {
        env_u64("BENCH_JOBS", 5_000)
    };
    let rounds = if args.test {
        1
    } else {
        env_u64("BENCH_ROUNDS", 7)
    };
    let modes = args.modes_or(&MODES);
    if std::env::args().any(|a| a == "--instructions") {
        let rounds = if args.test {
            1
        } else {
            env_u64("BENCH_ROUNDS", 3)
        };
        count_instructions(&modes, jobs, rounds);
        return;
    }
    let mut lines: Vec<Value> = Vec::new();
    for round in 0..rounds {
        for mode in &modes {
            let mut order = VARIANTS;
            order.rotate_left(usize::try_from(round).unwrap_or(0) % VARIANTS.len());
            for variant in order {
                let line = run_child(mode, variant, jobs);
                println!("{line}");
                lines.push(line);
            }
        }
    }
    for mode in &modes {
        summarize(&lines, mode);
    }
}

fn run_child(mode: &str, variant: &str, jobs: u64) -> Value {
    let out = Command::new(std::env::current_exe().expect("this bench"))
        .env("BENCH_OBS_CHILD", variant)
        .env("BENCH_OBS_MODE", mode)
        .env("BENCH_JOBS", jobs.to_string())
        .output()
        .expect("run a child");
    assert!(
        out.status.success(),
        "child {mode}/{variant} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    serde_json::from_str(text.trim()).expect("one JSON line")
}

/// Median and range of `key` over the lines of `mode`/`variant`.
fn stats(lines: &[Value], mode: &str, variant: &str, key: &str) -> (f64, f64, f64) {
    let mut v: Vec<f64> = lines
        .iter()
        .filter(|l| l["mode"] == mode && l["variant"] == variant)
        .filter_map(|l| l[key].as_f64())
        .collect();
    v.sort_by(f64::total_cmp);
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    (median, v[0], v[v.len() - 1])
}

fn summarize(lines: &[Value], mode: &str) {
    let (off_rate, off_lo, off_hi) = stats(lines, mode, "off", "jobs_per_sec");
    let (off_cpu, off_cpu_lo, off_cpu_hi) = stats(lines, mode, "off", "client_cpu_us_per_job");
    println!(
        "{mode} off: {off_rate:.0} jobs/s [{off_lo:.0}..{off_hi:.0}], client CPU {off_cpu:.1} \
         us/job [{off_cpu_lo:.1}..{off_cpu_hi:.1}]"
    );
    for variant in &VARIANTS[1..] {
        let (rate, lo, hi) = stats(lines, mode, variant, "jobs_per_sec");
        let (cpu, cpu_lo, cpu_hi) = stats(lines, mode, variant, "client_cpu_us_per_job");
        println!(
            "{mode} {variant}: {rate:.0} jobs/s [{lo:.0}..{hi:.0}], client CPU {cpu:.1} us/job \
             [{cpu_lo:.1}..{cpu_hi:.1}] => throughput overhead {:.1}%, CPU overhead {:.1}%",
            (off_rate - rate) / off_rate * 100.0,
            (cpu - off_cpu) / off_cpu * 100.0,
        );
    }
}

/// Client instructions per job (see the module's doc), in `rounds` interleaved rounds.
fn count_instructions(modes: &[String], jobs: u64, rounds: u64) {
    let small = (jobs / 5).max(1);
    let mut lines: Vec<Value> = Vec::new();
    for round in 0..rounds {
        for mode in modes {
            let mut order = VARIANTS;
            order.rotate_left(usize::try_from(round).unwrap_or(0) % VARIANTS.len());
            for variant in order {
                let big = counted(mode, variant, jobs);
                let less = counted(mode, variant, small);
                #[allow(clippy::cast_precision_loss)] // counts far below 2^52
                let per_job = (big as f64 - less as f64) / (jobs - small) as f64;
                let line = json!({
                    "mode": mode,
                    "variant": variant,
                    "jobs": [small, jobs],
                    "instructions": [less, big],
                    "instructions_per_job": per_job,
                });
                println!("{line}");
                lines.push(line);
            }
        }
    }
    for mode in modes {
        let (off, off_lo, off_hi) = stats(&lines, mode, "off", "instructions_per_job");
        println!("{mode} off: {off:.0} instructions/job [{off_lo:.0}..{off_hi:.0}]");
        for variant in &VARIANTS[1..] {
            let (n, lo, hi) = stats(&lines, mode, variant, "instructions_per_job");
            println!(
                "{mode} {variant}: {n:.0} instructions/job [{lo:.0}..{hi:.0}] => overhead {:.1}%",
                (n - off) / off * 100.0
            );
        }
    }
}

/// The instructions a child executes under callgrind for `jobs` jobs, its queue filled (for
/// the worker) by this process beforehand and emptied after.
fn counted(mode: &str, variant: &str, jobs: u64) -> u64 {
    let url = redis_url();
    let prefix = unique_prefix("bench-obs-ir", mode);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if mode == "worker" {
        runtime.block_on(fill(&url, &prefix, jobs));
    }
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(std::env::current_exe().expect("this bench"))
        .env("BENCH_OBS_CHILD", variant)
        .env("BENCH_OBS_MODE", mode)
        .env("BENCH_OBS_PREFIX", &prefix)
        .env("BENCH_JOBS", jobs.to_string())
        .output()
        .expect("valgrind (apt-get install valgrind)");
    runtime.block_on(async {
        let mut admin = admin(&url).await;
        delete_prefix(&mut admin, &prefix).await;
    });
    support::instructions::collected(&out, &format!("child {mode}/{variant}"))
}

/// One measured run, in this (child) process.
fn child(mode: &str, variant: &str, jobs: u64) {
    // Kept alive for the whole run: dropping the provider ends its spans' recording.
    let _provider = match variant {
        "otel" => {
            let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
            // The lean setup the README recommends: no per-span source location, thread
            // and busy/idle attributes.
            let layer = tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("bullmq"))
                .with_location(false)
                .with_threads(false)
                .with_tracked_inactivity(false);
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
                .expect("the only subscriber");
            Some(provider)
        }
        "registry" => {
            tracing::subscriber::set_global_default(tracing_subscriber::registry())
                .expect("the only subscriber");
            None
        }
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Given by a parent counting instructions: the queue is filled and emptied there.
    let given = std::env::var("BENCH_OBS_PREFIX").ok();
    let (secs, cpu) = runtime.block_on(async {
        let url = redis_url();
        let prefix = given
            .clone()
            .unwrap_or_else(|| unique_prefix("bench-obs", mode));
        let measured = match mode {
            "add" => add(&url, &prefix, jobs).await,
            "worker" => {
                if given.is_none() {
                    fill(&url, &prefix, jobs).await;
                }
                work(&url, &prefix, jobs).await
            }
            other => panic!("unknown mode {other}"),
        };
        if given.is_none() {
            delete_prefix(&mut admin(&url).await, &prefix).await;
        }
        measured
    });
    #[allow(clippy::cast_precision_loss)] // job counts
    let jobs_f = jobs as f64;
    let line = json!({
        "mode": mode,
        "variant": variant,
        "jobs": jobs,
        "secs": secs,
        "jobs_per_sec": jobs_f / secs,
        "client_cpu_us_per_job": cpu.as_secs_f64() * 1e6 / jobs_f,
    });
    println!("{line}");
}

async fn backend(url: &str, prefix: &str) -> RedisBackend {
    let options = RedisOptions::new(url.to_owned()).prefix(Prefix::new(prefix).expect("prefix"));
    RedisBackend::connect(&options, QueueName::new("bench").expect("name"))
        .await
        .expect("connect")
}

/// Sequential adds: wall seconds and process CPU.
async fn add(url: &str, prefix: &str, jobs: u64) -> (f64, Duration) {
    let queue = Queue::try_new(
        QueueName::new("bench").expect("name"),
        backend(url, prefix).await,
    )
    .expect("the backend is bound to this queue");
    let data = json!({"i": 0, "payload": "x".repeat(64)});
    queue
        .add("warm", &data, JobOptions::new())
        .await
        .expect("add");
    let (t0, c0) = (Instant::now(), cpu_clock());
    for _ in 0..jobs {
        queue
            .add("job", &data, JobOptions::new())
            .await
            .expect("add");
    }
    (t0.elapsed().as_secs_f64(), cpu_clock() - c0)
}

/// This process's CPU clock, or zero under valgrind (a child counted by a parent: valgrind
/// does not serve the vDSO the clock is read through, and the count replaces it).
fn cpu_clock() -> Duration {
    if std::env::var_os("BENCH_OBS_PREFIX").is_some() {
        Duration::ZERO
    } else {
        process_cpu()
    }
}

/// Queues `jobs` jobs for the worker.
async fn fill(url: &str, prefix: &str, jobs: u64) {
    let queue = Queue::try_new(
        QueueName::new("bench").expect("name"),
        backend(url, prefix).await,
    )
    .expect("the backend is bound to this queue");
    let data = json!({"payload": "x".repeat(64)});
    let batch: Vec<BulkJob<Value>> = (0..jobs)
        .map(|_| BulkJob {
            name: "job".to_owned(),
            data: data.clone(),
            opts: JobOptions::new(),
        })
        .collect();
    for chunk in batch.chunks(1_000) {
        queue.add_bulk(chunk.to_vec()).await.expect("add_bulk");
    }
}

/// A worker at concurrency 100 through `jobs` queued jobs: wall seconds and process CPU from
/// its start until it has closed after its processor ran `jobs` times (so every job is
/// finished: closing waits for the jobs in progress).
async fn work(url: &str, prefix: &str, jobs: u64) -> (f64, Duration) {
    let started = Arc::new(AtomicU64::new(0));
    let all_started = Arc::new(tokio::sync::Notify::new());
    let (t0, c0) = (Instant::now(), cpu_clock());
    let (count, notify) = (Arc::clone(&started), Arc::clone(&all_started));
    let worker = Worker::new(
        QueueName::new("bench").expect("name"),
        backend(url, prefix).await,
        WorkerOptions::new().concurrency(100),
        move |_job, _cancel| {
            if count.fetch_add(1, Ordering::Relaxed) + 1 == jobs {
                notify.notify_one();
            }
            async { Ok(Value::Null) }
        },
    )
    .await
    .expect("worker");
    all_started.notified().await;
    worker.close().await;
    (t0.elapsed().as_secs_f64(), cpu_clock() - c0)
}
