//! Job scheduler upserts on Redis: 1,000 distinct schedulers upserted one awaited
//! `JobScheduler::upsert` at a time, `every` (a minute) and `cron` (`*/5 * * * *` in
//! `Europe/London`, so each upsert also runs the cron engine).
//!
//! `benches/node/scheduler.mjs` runs the same modes with Node.js BullMQ 6.7.6's
//! `queue.upsertJobScheduler`; `benches/compare-scheduler.sh` runs both on the same Redis and
//! prints the ratio. Each mode runs on a fresh key prefix (deleted afterwards) after an
//! unmeasured warm-up, checks that every scheduler and its first iteration exist, and prints
//! one JSON line:
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"cron","schedulers":1000,"secs":..,"upserts_per_sec":..}
//! ```
//!
//! `cargo bench --bench redis_scheduler --features scheduler [-- --mode NAME]`; `-- --test`
//! (CI's smoke run) upserts 20 schedulers per mode without warm-up. Env: `BENCH_SCHEDULERS`
//! (1,000), `REDIS_URL`.

#[path = "support/mod.rs"]
mod support;

#[path = "support/ours.rs"]
mod ours;

use std::time::{Duration, Instant};

use bullmq::RepeatOptions;
use bullmq::scheduler::{JobScheduler, JobTemplate};
use serde_json::json;

use support::cli::Args;
use support::measure::{admin, delete_prefix};

const PATTERN: &str = "*/5 * * * *";
const TZ: &str = "Europe/London";
const EVERY: Duration = Duration::from_secs(60);

fn schedule(mode: &str) -> RepeatOptions {
    match mode {
        "every" => RepeatOptions {
            every: Some(EVERY),
            ..RepeatOptions::default()
        },
        "cron" => RepeatOptions {
            pattern: Some(PATTERN.to_owned()),
            tz: Some(TZ.to_owned()),
            ..RepeatOptions::default()
        },
        other => panic!("unknown mode {other} (every, cron)"),
    }
}

async fn run(url: &str, mode: &str, schedulers: usize) -> serde_json::Value {
    let (prefix, backend) = ours::fresh_redis(url, "bench-sched", "bench").await;
    let jobs = JobScheduler::new(backend);
    let schedule = schedule(mode);
    let start = Instant::now();
    for i in 0..schedulers {
        let template = JobTemplate::named("tick").data(json!({"i": i, "payload": "scheduled"}));
        jobs.upsert(&format!("sched-{i}"), &schedule, template)
            .await
            .expect("upsert a scheduler")
            .expect("a first iteration");
    }
    let secs = start.elapsed().as_secs_f64();
    let mut con = admin(url).await;
    // An `every` scheduler's first iteration is due at once (waiting), a cron one's later.
    let (count, delayed, waiting): (usize, usize, usize) = redis::pipe()
        .cmd("ZCARD")
        .arg(format!("{prefix}:bench:repeat"))
        .cmd("ZCARD")
        .arg(format!("{prefix}:bench:delayed"))
        .cmd("LLEN")
        .arg(format!("{prefix}:bench:wait"))
        .query_async(&mut con)
        .await
        .expect("ZCARD");
    assert_eq!(
        (count, delayed + waiting),
        (schedulers, schedulers),
        "every scheduler and its first iteration"
    );
    delete_prefix(&mut con, &prefix).await;
    json!({
        "impl": "bullmq-rs", "mode": mode, "schedulers": schedulers, "secs": secs,
        "upserts_per_sec": f64::from(u32::try_from(schedulers).unwrap_or(u32::MAX)) / secs,
    })
}

fn main() {
    Args::parse().time_each_mode("BENCH_SCHEDULERS", &["every", "cron"], &run);
}
