//! Only what is Redis-specific; the shared cases are the conformance suite's `schedulers.rs`.
//!
//! `Schedulers` on Redis: the scheduler hash, the `repeat` set and the iteration jobs, as
//! upstream's scripts write them, and one cross-check with Node.js BullMQ itself.

use crate::support::queue_ops as support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use bullmq_core::backend::{AddJobSchedulerArgs, NextIterationArgs, Schedulers};
use bullmq_core::options::UnixMillis;
use bullmq_core::scheduling::RepeatOptions;
use bullmq_core::{Error, JobId, JobOptions, ScriptErrorCode};
use support::{Ctx, T0};

const PATTERN: &str = "*/5 * * * *";

fn cron() -> RepeatOptions {
    RepeatOptions::cron(PATTERN)
}

fn every(ms: u64) -> RepeatOptions {
    RepeatOptions::every(Duration::from_millis(ms))
}

/// The options of an iteration, shaped as Node.js's `getNextJobOpts` shapes them.
fn iteration_opts(id: &str, next_millis: u64, now: u64, schedule: &RepeatOptions) -> JobOptions {
    let mut opts = JobOptions::new()
        .attempts(3)
        .job_id(format!("repeat:{id}:{next_millis}"))
        .delay(Duration::from_millis(next_millis.saturating_sub(now)))
        .created_at(now)
        .prev_run_at(next_millis)
        .repeat(RepeatOptions {
            count: Some(1),
            ..schedule.clone()
        });
    opts.extra
        .insert("repeatJobKey".to_owned(), serde_json::json!(id));
    opts
}

fn upsert_args(id: &str, next_millis: u64, schedule: RepeatOptions) -> AddJobSchedulerArgs {
    AddJobSchedulerArgs {
        scheduler_id: id.to_owned(),
        next_millis,
        template_name: "report".to_owned(),
        template_data: r#"{"a":1}"#.to_owned(),
        template_opts: JobOptions::new().attempts(3),
        delayed_job_opts: iteration_opts(id, next_millis, T0, &schedule),
        schedule,
        producer_id: None,
    }
}

/// Upserts the scheduler `id` through the backend, its next iteration at `next_millis`.
async fn upsert(
    ctx: &Ctx,
    id: &str,
    next_millis: u64,
    schedule: RepeatOptions,
) -> bullmq_core::Result<(JobId, Duration)> {
    ctx.backend
        .add_job_scheduler(&upsert_args(id, next_millis, schedule))
        .await
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn script_code(err: Error) -> (ScriptErrorCode, &'static str) {
    match err {
        Error::Script(e) => (e.code, e.command),
        other => panic!("expected a script error, got {other}"),
    }
}

#[tokio::test]
async fn upsert_stores_the_scheduler_and_its_delayed_iteration() {
    let ctx = Ctx::new().await;
    let next = T0 + 60_000;
    let (id, delay) = upsert(&ctx, "s1", next, cron()).await.unwrap();

    assert_eq!(id, JobId::from(format!("repeat:s1:{next}")));
    assert_eq!(delay, Duration::from_secs(60));
    #[allow(clippy::cast_precision_loss)]
    let next_f = next as f64;
    assert_eq!(ctx.zset("repeat"), vec![("s1".to_owned(), next_f)]);
    assert_eq!(
        ctx.hgetall("repeat:s1"),
        map(&[
            ("name", "report"),
            ("pattern", PATTERN),
            ("opts", r#"{"attempts":3}"#),
            ("data", r#"{"a":1}"#),
            // Node.js stores the computed offset, 0 for a pattern, as well.
            ("offset", "0"),
            ("ic", "1"),
        ])
    );

    let job = ctx.hgetall(id.as_str());
    assert_eq!(job["name"], "report");
    assert_eq!(job["data"], r#"{"a":1}"#);
    assert_eq!(job["rjk"], "s1");
    assert_eq!(job["delay"], "60000");
    assert_eq!(job["timestamp"], T0.to_string());
    let opts: serde_json::Value = serde_json::from_str(&job["opts"]).unwrap();
    assert_eq!(opts["jobId"], id.as_str());
    assert_eq!(opts["repeat"]["pattern"], PATTERN);
    ctx.assert_only_delayed_until(&id, next);
}

#[tokio::test]
async fn every_scheduler_computes_its_slot_and_offset_in_the_script() {
    let ctx = Ctx::new().await;
    // `every` schedules ignore the next time passed in: the script aligns to the interval.
    let (id, delay) = upsert(&ctx, "e1", T0 + 123, every(1_000)).await.unwrap();
    assert_eq!(id, JobId::from(format!("repeat:e1:{T0}")));
    assert_eq!(delay, Duration::ZERO);
    let hash = ctx.hgetall("repeat:e1");
    assert_eq!(hash["every"], "1000");
    assert_eq!(hash["offset"], "0");
    assert_eq!(hash["ic"], "1");
    assert!(!hash.contains_key("pattern"));
    assert_eq!(
        ctx.list("wait"),
        vec![id.to_string()],
        "due now: straight to wait"
    );
}

#[tokio::test]
async fn upsert_again_replaces_the_pending_iteration() {
    let ctx = Ctx::new().await;
    let (first, _) = upsert(&ctx, "s1", T0 + 60_000, cron()).await.unwrap();
    let (second, _) = upsert(&ctx, "s1", T0 + 120_000, cron()).await.unwrap();
    assert_ne!(first, second);
    assert!(!ctx.exists(first.as_str()));
    assert_eq!(ctx.zmembers("delayed"), vec![second.to_string()]);
    assert_eq!(ctx.hget("repeat:s1", "ic").as_deref(), Some("1"));
}

#[tokio::test]
async fn upsert_onto_a_finished_iteration_is_a_collision() {
    let ctx = Ctx::new().await;
    let next = T0 + 60_000;
    let (id, _) = upsert(&ctx, "s1", next, cron()).await.unwrap();
    // The iteration ran and completed; its id is still taken.
    ctx.cmd::<()>(redis::cmd("ZREM").arg(ctx.key("delayed")).arg(id.as_str()));
    ctx.cmd::<()>(
        redis::cmd("ZADD")
            .arg(ctx.key("completed"))
            .arg(next)
            .arg(id.as_str()),
    );

    let err = upsert(&ctx, "s1", next, cron()).await.unwrap_err();
    assert_eq!(
        script_code(err),
        (ScriptErrorCode::SchedulerJobIdCollision, "addJobScheduler")
    );
}

#[tokio::test]
async fn next_iteration_is_added_once_by_the_producing_job() {
    let ctx = Ctx::new().await;
    let first_millis = T0 + 60_000;
    let (first, _) = upsert(&ctx, "s1", first_millis, cron()).await.unwrap();
    ctx.clock.set(first_millis);
    let next = first_millis + 60_000;
    // `producer` asks for the iteration after its own.
    let advance = |producer: &str| {
        let args = NextIterationArgs {
            scheduler_id: "s1".to_owned(),
            next_millis: next,
            template_data: r#"{"a":1}"#.to_owned(),
            delayed_job_opts: iteration_opts("s1", next, first_millis, &cron()),
            producer_id: Some(producer.to_owned()),
        };
        let backend = ctx.backend.clone();
        async move {
            let added = backend.update_job_scheduler_next_millis(&args).await;
            added.expect("updateJobScheduler")
        }
    };

    let stranger = advance("repeat:s1:1").await;
    assert_eq!(stranger, None, "only the current iteration may advance");

    let added = advance(first.as_str()).await;
    let expected = JobId::from(format!("repeat:s1:{next}"));
    assert_eq!(added, Some(expected.clone()));
    #[allow(clippy::cast_precision_loss)]
    let next_f = next as f64;
    assert_eq!(ctx.zset("repeat"), vec![("s1".to_owned(), next_f)]);
    assert_eq!(ctx.hget("repeat:s1", "ic").as_deref(), Some("2"));
    let job = ctx.hgetall(expected.as_str());
    assert_eq!(job["delay"], "60000");
    assert_eq!(job["data"], r#"{"a":1}"#);
    assert_eq!(job["rjk"], "s1");

    // A replay by the old producer is stale: nothing happens.
    let replay = advance(first.as_str()).await;
    assert_eq!(replay, None);
    assert!(ctx.events_named("duplicated").is_empty());
    // The current iteration asking for a slot that is taken: only a `duplicated` event.
    let taken = advance(expected.as_str()).await;
    assert_eq!(taken, None);
    let dup = ctx.events_named("duplicated").pop().unwrap();
    assert_eq!(dup["jobId"], expected.as_str());
}

#[tokio::test]
async fn get_job_scheduler_decodes_the_record() {
    let ctx = Ctx::new().await;
    let schedule = cron()
        .tz("Europe/Paris")
        .limit(10)
        .end_date(T0 + 86_400_000);
    upsert(&ctx, "s1", T0 + 60_000, schedule).await.unwrap();

    let record = ctx.backend.get_job_scheduler("s1").await.unwrap().unwrap();
    assert_eq!(record.id, "s1");
    assert_eq!(record.name, "report");
    assert_eq!(record.next_millis, Some(T0 + 60_000));
    assert_eq!(record.iteration_count, 1);
    assert_eq!(record.schedule.pattern.as_deref(), Some(PATTERN));
    assert_eq!(record.schedule.tz.as_deref(), Some("Europe/Paris"));
    assert_eq!(record.schedule.limit, Some(10));
    assert_eq!(
        record.schedule.end_at().map(UnixMillis::get),
        Some(T0 + 86_400_000)
    );
    assert_eq!(record.template_data.as_deref(), Some(r#"{"a":1}"#));
    assert_eq!(record.template_opts, Some(JobOptions::new().attempts(3)));

    assert_eq!(ctx.backend.get_job_scheduler("nope").await.unwrap(), None);
    assert!(ctx.backend.is_job_scheduler("s1").await.unwrap());
    assert!(!ctx.backend.is_job_scheduler("nope").await.unwrap());
}

#[tokio::test]
async fn remove_job_scheduler_removes_the_pending_iteration() {
    let ctx = Ctx::new().await;
    let (id, _) = upsert(&ctx, "s1", T0 + 60_000, cron()).await.unwrap();

    assert!(ctx.backend.remove_job_scheduler("s1").await.unwrap());
    assert!(!ctx.exists("repeat:s1") && !ctx.exists("repeat"));
    assert!(!ctx.exists(id.as_str()));
    assert!(ctx.zset("delayed").is_empty());
    let removed = ctx.events_named("removed").pop().unwrap();
    assert_eq!(removed["jobId"], id.as_str());
    assert_eq!(removed["prev"], "delayed");

    assert!(!ctx.backend.remove_job_scheduler("s1").await.unwrap());
}

/// Where the pinned Node.js BullMQ is installed; the test fails, saying what to run, without it.
fn node_modules() -> &'static Path {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/node/node_modules"
    ));
    assert!(
        dir.join("bullmq").exists(),
        "the pinned Node.js packages are missing: run `npm ci --prefix tests/node`"
    );
    dir
}

/// Node.js upserts a twin of our scheduler and reads ours back: both hashes must match field
/// for field, and Node must read our scheduler and its iteration job.
#[tokio::test]
async fn node_reads_a_rust_scheduler_and_writes_the_same_hash() {
    let modules = node_modules();
    let ctx = Ctx::new().await;
    let now = bullmq_core::clock::Clock::now_ms(&bullmq_core::clock::SystemClock);
    let next = now + 3_600_000;
    let mut args = upsert_args("rust", next, cron());
    args.delayed_job_opts = iteration_opts("rust", next, now, &cron());
    ctx.clock.set(now);
    let (iteration, _) = ctx.backend.add_job_scheduler(&args).await.unwrap();

    let script = r"
const IORedis = require('ioredis');
const { Queue } = require('bullmq');
(async () => {
  const connection = new IORedis(process.env.REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue(process.env.QUEUE, { connection, prefix: process.env.PREFIX });
  await queue.upsertJobScheduler('node', { pattern: process.env.PATTERN },
    { name: 'report', data: { a: 1 }, opts: { attempts: 3 } });
  const scheduler = await queue.getJobScheduler('rust');
  const job = await queue.getJob(process.env.ITERATION);
  const count = await queue.getJobSchedulersCount();
  console.log(JSON.stringify({ scheduler, count,
    job: job && { name: job.name, data: job.data, attempts: job.opts.attempts,
                  repeatJobKey: job.repeatJobKey, delay: job.delay } }));
  await queue.close();
  connection.disconnect();
})().catch((e) => { console.error(e); process.exit(1); });
";
    let out = std::process::Command::new("node")
        .arg("-e")
        .arg(script)
        .env("NODE_PATH", modules)
        .env("REDIS_URL", support::redis_url())
        .env("QUEUE", &ctx.name)
        .env("PREFIX", &ctx.prefix)
        .env("PATTERN", PATTERN)
        .env("ITERATION", iteration.as_str())
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    assert_eq!(seen["count"], 2);
    let s = &seen["scheduler"];
    assert_eq!(s["key"], "rust");
    assert_eq!(s["name"], "report");
    assert_eq!(s["pattern"], PATTERN);
    assert_eq!(s["next"], next);
    assert_eq!(s["iterationCount"], 1);
    assert_eq!(s["template"]["data"], serde_json::json!({"a": 1}));
    assert_eq!(s["template"]["opts"], serde_json::json!({"attempts": 3}));
    let job = &seen["job"];
    assert_eq!(job["name"], "report");
    assert_eq!(job["data"], serde_json::json!({"a": 1}));
    assert_eq!(job["attempts"], 3);
    assert_eq!(job["repeatJobKey"], "rust");
    assert_eq!(job["delay"], 3_600_000);

    assert_eq!(ctx.hgetall("repeat:rust"), ctx.hgetall("repeat:node"));
}
