//! Job schedulers across runtimes, on a real Redis with Node.js BullMQ 6.7.6:
//!
//! - A cron (`pattern`, seconds resolution, with a time zone) or `every` scheduler upserted by
//!   Rust is iterated by a Node.js worker and by a Rust worker, each on its own queue upserted
//!   identically; the same with Node.js upserting; and one queue upserted and iterated by
//!   Node.js beside one upserted and iterated by Rust, for those and for bounded schedules
//!   (`limit`, start and end dates; with no template, or one with nested options). Both
//!   queues run the very iterations the upserting runtime's schedule gives
//!   (`repeat:<schedulerId>:<millis>`, computed here with our cron engine or
//!   `startDate + k * every`), none before its slot, with identical job hashes (`opts` compared
//!   as text: the same key order, only its `timestamp` and `delay` masked), scheduler hashes
//!   and queue meta.
//! - Caller order (issue 24): a Node.js producer and a Rust producer upsert the same scheduler
//!   with the schedule's keys (and the template's options) in the same caller order, for cron
//!   and `every` schedules in several orders; every key both leave is compared byte for byte
//!   (hash fields in order, sorted-set members and scores), the iteration's clock readings
//!   masked.
//! - R17 in docs/RELIABILITY.md: two Rust workers and a Node.js worker on one queue while a
//!   Rust and a Node.js producer upsert the same scheduler at once: exactly one job per tick,
//!   none skipped, none doubled, over several ticks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use bullmq::cron::{CronExpression, CronOptions};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::scheduler::{JobScheduler, JobTemplate};
use bullmq::{
    ActiveJob, Backoff, JobOptions, KeepJobs, Prefix, Processor, QueueName, RepeatOptions, Worker,
    WorkerEvent, WorkerOptions,
};
use serde_json::{Value, json};

use crate::support::now_ms;
use crate::support::scheduled::{members, until_completed, without_clock};

/// Iterations each worker runs.
const COUNT: usize = 3;
const PATTERN: &str = "*/1 * * * * *";
const TZ: &str = "America/New_York";
const EVERY: u64 = 500;

async fn backend(prefix: &str, queue: &str) -> RedisBackend {
    let options = RedisOptions::new(support::redis_url()).prefix(Prefix::new(prefix).unwrap());
    RedisBackend::connect(&options, QueueName::new(queue).unwrap())
        .await
        .unwrap()
}

async fn hash(key: &str) -> BTreeMap<String, String> {
    redis::cmd("HGETALL")
        .arg(key)
        .query_async(&mut support::redis().await)
        .await
        .unwrap()
}

/// A whole second at least `lead` from now: far enough for Node.js to start before it.
fn start_after(lead: u64) -> u64 {
    (now_ms() + lead).div_ceil(1000) * 1000
}

#[derive(Clone, Copy, Debug)]
enum Runtime {
    Rust,
    Node,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `pattern` and `tz` from a start date, with a template.
    Cron,
    /// `every` from a start date, with a template.
    Every,
    /// `pattern` with a `limit`, start and end dates, and no template.
    CronBounded,
    /// `every` with a `limit` and start and end dates; a template with nested options.
    EveryBounded,
}

/// The schedule, for Rust and as the JSON Node.js is given (keys in the order Rust writes
/// them, as a Node.js caller could write them).
fn schedule(kind: Kind, start: u64) -> (RepeatOptions, Value) {
    let end = start + 3_600_000;
    match kind {
        Kind::Cron => (
            RepeatOptions::cron(PATTERN).tz(TZ).start_date(start),
            json!({"pattern": PATTERN, "tz": TZ, "startDate": start}),
        ),
        Kind::Every => (
            RepeatOptions::every(Duration::from_millis(EVERY)).start_date(start),
            json!({"every": EVERY, "startDate": start}),
        ),
        Kind::CronBounded => (
            // Dates as `SystemTime`s: the same milliseconds.
            RepeatOptions::cron(PATTERN)
                .limit(10)
                .tz(TZ)
                .start_date(UNIX_EPOCH + Duration::from_millis(start))
                .end_date(UNIX_EPOCH + Duration::from_millis(end)),
            json!({"pattern": PATTERN, "limit": 10, "tz": TZ, "startDate": start, "endDate": end}),
        ),
        Kind::EveryBounded => (
            RepeatOptions::every(Duration::from_millis(EVERY))
                .limit(10)
                .start_date(start)
                .end_date(end),
            json!({"every": EVERY, "limit": 10, "startDate": start, "endDate": end}),
        ),
    }
}

/// The job template, for Rust and as the JSON Node.js is given; `None`: no template.
fn template(kind: Kind) -> Option<(JobTemplate, Value)> {
    match kind {
        Kind::Cron | Kind::Every => Some((
            JobTemplate::named("tick")
                .data(json!({"a": 1}))
                .opts(JobOptions::new().attempts(2)),
            json!({"name": "tick", "data": {"a": 1}, "opts": {"attempts": 2}}),
        )),
        Kind::CronBounded => None,
        Kind::EveryBounded => Some((
            JobTemplate::named("tock").data(json!({"b": [1, 2]})).opts(
                JobOptions::new()
                    .priority(3)
                    .backoff(Backoff::exponential(Duration::from_secs(1)))
                    .remove_on_complete(KeepJobs::policy_count(5)),
            ),
            json!({"name": "tock", "data": {"b": [1, 2]}, "opts": {
                "priority": 3,
                "backoff": {"type": "exponential", "delay": 1000},
                "removeOnComplete": {"count": 5},
            }}),
        )),
    }
}

/// The first `n` slots of the schedule: what the upserting runtime's schedule gives.
fn slots(kind: Kind, start: u64, n: usize) -> Vec<u64> {
    match kind {
        Kind::Cron | Kind::CronBounded => {
            let options = CronOptions::new()
                .tz(TZ)
                .current_date(start)
                .start_date(start);
            CronExpression::parse(PATTERN, &options).unwrap().take(n)
        }
        Kind::Every | Kind::EveryBounded => (0..n as u64).map(|k| start + k * EVERY).collect(),
    }
}

/// Upserts scheduler `id` of `kind` on each of `queues` from `runtime`, `times` times in a row.
async fn upsert(
    runtime: Runtime,
    prefix: &str,
    queues: &[&str],
    id: &str,
    (kind, start): (Kind, u64),
    times: usize,
) {
    let schedule = schedule(kind, start);
    match runtime {
        Runtime::Rust => {
            for queue in queues {
                let schedulers = JobScheduler::new(backend(prefix, queue).await);
                for _ in 0..times {
                    let template = template(kind).map(|t| t.0).unwrap_or_default();
                    schedulers.upsert(id, &schedule.0, template).await.unwrap();
                }
            }
        }
        Runtime::Node => {
            let (prefix, queues, id) = (prefix.to_owned(), queues.join(","), id.to_owned());
            let (repeat, times) = (schedule.1.to_string(), times.to_string());
            let template = template(kind).map(|t| t.1.to_string());
            tokio::task::spawn_blocking(move || {
                let mut env = vec![
                    ("MODE", "upsert"),
                    ("PREFIX", &prefix),
                    ("QUEUES", &queues),
                    ("ID", &id),
                    ("REPEAT", &repeat),
                    ("TIMES", &times),
                ];
                if let Some(template) = &template {
                    env.push(("TEMPLATE", template));
                }
                support::run_node("scheduler-interop.mjs", &env)
            })
            .await
            .unwrap();
        }
    }
}

/// Runs Node.js workers in a child process; see `tests/node/scheduler-interop.mjs`.
fn node_workers(
    prefix: &str,
    queue: &str,
    env: &[(&str, String)],
) -> tokio::task::JoinHandle<Value> {
    let mut all = vec![
        ("MODE".to_owned(), "work".to_owned()),
        ("PREFIX".to_owned(), prefix.to_owned()),
        ("QUEUE".to_owned(), queue.to_owned()),
    ];
    all.extend(env.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        serde_json::from_str(support::run_node("scheduler-interop.mjs", &env).trim()).unwrap()
    })
}

/// A Rust worker named `sched-w` that records the ids it processes in `seen`.
async fn rust_worker(
    prefix: &str,
    queue: &str,
    seen: Arc<Mutex<Vec<String>>>,
) -> Worker<RedisBackend, impl Processor<RedisBackend>> {
    Worker::new(
        QueueName::new(queue).unwrap(),
        backend(prefix, queue).await,
        WorkerOptions::new()
            .name("sched-w")
            .drain_delay(Duration::from_millis(500)),
        move |job: ActiveJob<RedisBackend>, _| {
            seen.lock().unwrap().push(job.id.to_string());
            async { Ok(json!({"tick": true})) }
        },
    )
    .await
    .unwrap()
}

/// Upserts the schedule on queue `n` from `upserters.0` and on queue `r` from `upserters.1`; a
/// Node.js worker iterates `n`, a Rust worker `r`; both must run exactly the schedule's slots,
/// and leave the same bytes: job hashes (`opts` as text, key order included) and scheduler
/// and meta hashes.
async fn iterated_by_both(upserters: (Runtime, Runtime), kind: Kind) {
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    // Two upserts (each a Node.js process when Node upserts) must land before the first slot.
    let start = start_after(6_000);
    upsert(upserters.0, &prefix, &["n"], "sch", (kind, start), 1).await;
    upsert(upserters.1, &prefix, &["r"], "sch", (kind, start), 1).await;
    let node = node_workers(&prefix, "n", &[("COUNT", COUNT.to_string())]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let worker = rust_worker(&prefix, "r", Arc::clone(&seen)).await;
    let mut events = worker.events();
    let (node_key, rust_key) = (format!("{prefix}:n"), format!("{prefix}:r"));
    until_completed(&rust_key, COUNT, Duration::from_secs(30)).await;
    worker.close().await;
    let node_out = node.await.unwrap();
    assert_eq!(node_out["errors"], json!([]), "Node.js worker errors");
    while let Ok(event) = events.try_recv() {
        assert!(
            !matches!(event, WorkerEvent::Error(_)),
            "no error while advancing: {event:?}"
        );
    }

    let expected: Vec<String> = slots(kind, start, COUNT + 1)
        .iter()
        .map(|m| format!("repeat:sch:{m}"))
        .collect();
    let node_done = members(&node_key, "completed").await;
    let rust_done = members(&rust_key, "completed").await;
    let case = format!("{upserters:?} {kind:?}");
    assert_eq!(node_done, expected[..COUNT], "{case}: Node.js worker");
    assert_eq!(rust_done, expected[..COUNT], "{case}: Rust worker");
    assert_eq!(*seen.lock().unwrap(), expected[..COUNT]);
    // A prioritized template's next iteration is delayed all the same.
    assert_eq!(members(&node_key, "delayed").await, expected[COUNT..]);
    assert_eq!(members(&rust_key, "delayed").await, expected[COUNT..]);
    for id in &expected {
        let theirs = hash(&format!("{node_key}:{id}")).await;
        let ours = hash(&format!("{rust_key}:{id}")).await;
        assert!(!theirs.is_empty(), "{id}");
        if let Some(ran) = ours.get("processedOn") {
            let slot: u64 = id.rsplit(':').next().unwrap().parse().unwrap();
            assert!(
                ran.parse::<u64>().unwrap() >= slot,
                "{id} ran before its slot"
            );
        }
        assert_eq!(
            without_clock(ours),
            without_clock(theirs),
            "{case}: iteration {id}"
        );
    }
    let theirs = hash(&format!("{node_key}:repeat:sch")).await;
    assert_eq!(theirs["ic"], (COUNT + 1).to_string());
    assert_eq!(
        hash(&format!("{rust_key}:repeat:sch")).await,
        theirs,
        "{case}"
    );
    // The queue's meta, written by the upserting queue as Node.js's `Queue` writes it.
    let theirs = hash(&format!("{node_key}:meta")).await;
    assert_eq!(theirs["version"], "bullmq:6.7.6");
    assert_eq!(hash(&format!("{rust_key}:meta")).await, theirs, "{case}");
}

/// One [`iterated_by_both`] test per row: `name: (upserter of queue n, of queue r), kind`.
macro_rules! iterated_by_both_tests {
    ($($name:ident: ($upserter:ident, $iterator:ident), $kind:ident;)*) => {$(
        #[tokio::test]
        async fn $name() {
            iterated_by_both((Runtime::$upserter, Runtime::$iterator), Kind::$kind).await;
        }
    )*};
}

iterated_by_both_tests! {
    a_cron_scheduler_upserted_by_rust_is_iterated_alike_by_node_and_rust: (Rust, Rust), Cron;
    a_cron_scheduler_upserted_by_node_is_iterated_alike_by_node_and_rust: (Node, Node), Cron;
    an_every_scheduler_upserted_by_rust_is_iterated_alike_by_node_and_rust: (Rust, Rust), Every;
    an_every_scheduler_upserted_by_node_is_iterated_alike_by_node_and_rust: (Node, Node), Every;
    a_cron_scheduler_upserted_and_iterated_by_rust_leaves_nodes_bytes: (Node, Rust), Cron;
    an_every_scheduler_upserted_and_iterated_by_rust_leaves_nodes_bytes: (Node, Rust), Every;
    a_bounded_cron_scheduler_without_template_leaves_nodes_bytes: (Node, Rust), CronBounded;
    a_bounded_every_scheduler_with_nested_template_options_leaves_nodes_bytes: (Node, Rust), EveryBounded;
    a_bounded_every_scheduler_upserted_by_node_is_iterated_alike_by_rust: (Node, Node), EveryBounded;
}

/// A schedule (and template) set in one caller order: for Rust, by calling the setters in that
/// order, and as the JSON a Node.js caller writes (its keys in that order).
struct InOrder {
    case: &'static str,
    rust: RepeatOptions,
    node: Value,
    template: Option<(JobTemplate, Value)>,
}

/// Schedules in the orders Node.js callers write them. Their first slot does not depend on
/// the clock (a yearly pattern, a start date, or an `every` of a day with an offset), so both
/// producers create the same iteration.
fn caller_orders() -> Vec<InOrder> {
    const YEARLY: &str = "0 0 1 1 *";
    const DAY: u64 = 86_400_000;
    let now = now_ms();
    let (start, end) = (start_after(3_600_000), now + 2 * 366 * DAY);
    let end_iso = bullmq::chrono::DateTime::from_timestamp_millis(i64::try_from(end).unwrap())
        .unwrap()
        .to_rfc3339_opts(bullmq::chrono::SecondsFormat::Millis, true);
    vec![
        InOrder {
            case: "cron: pattern, tz, limit, endDate",
            rust: RepeatOptions::cron(YEARLY)
                .tz("Europe/Paris")
                .limit(5)
                .end_date(end),
            node: json!({"pattern": YEARLY, "tz": "Europe/Paris", "limit": 5, "endDate": end}),
            template: Some((
                JobTemplate::named("yearly")
                    .data(json!({"z": 1, "a": [2]}))
                    .opts(
                        JobOptions::new()
                            .remove_on_complete(KeepJobs::Number(5))
                            .priority(2)
                            .attempts(3)
                            .backoff(Backoff::fixed(Duration::from_millis(100))),
                    ),
                json!({"name": "yearly", "data": {"z": 1, "a": [2]}, "opts": {
                    "removeOnComplete": 5,
                    "priority": 2,
                    "attempts": 3,
                    "backoff": {"type": "fixed", "delay": 100},
                }}),
            )),
        },
        InOrder {
            case: "cron: tz, endDate (ISO text), pattern, startDate, limit",
            rust: RepeatOptions::new()
                .tz("America/New_York")
                .end_date_iso(&end_iso)
                .unwrap()
                .pattern(YEARLY)
                .start_date(start)
                .limit(3),
            node: json!({"tz": "America/New_York", "endDate": end_iso, "pattern": YEARLY,
                "startDate": start, "limit": 3}),
            template: None,
        },
        InOrder {
            case: "cron: limit, startDate, pattern",
            rust: RepeatOptions::new()
                .limit(2)
                .start_date(start)
                .pattern(YEARLY),
            node: json!({"limit": 2, "startDate": start, "pattern": YEARLY}),
            template: Some((
                JobTemplate::named("t").opts(JobOptions::new().attempts(2).delay(Duration::ZERO)),
                json!({"name": "t", "opts": {"attempts": 2, "delay": 0}}),
            )),
        },
        InOrder {
            case: "every: startDate, every, count, limit",
            rust: RepeatOptions::new()
                .start_date(start)
                .interval(Duration::from_millis(DAY))
                .count(7)
                .limit(4),
            node: json!({"startDate": start, "every": DAY, "count": 7, "limit": 4}),
            template: Some((
                JobTemplate::named("e")
                    .data(json!({"k": "v"}))
                    .opts(JobOptions::new().lifo(true).attempts(1)),
                json!({"name": "e", "data": {"k": "v"}, "opts": {"lifo": true, "attempts": 1}}),
            )),
        },
        InOrder {
            case: "every: offset, limit, every, immediately",
            rust: RepeatOptions::new()
                .offset(Duration::from_millis(3_600_000))
                .limit(9)
                .interval(Duration::from_millis(DAY))
                .immediately(true),
            node: json!({"offset": 3_600_000, "limit": 9, "every": DAY, "immediately": true}),
            template: None,
        },
        InOrder {
            case: "every: every, limit, offset, startDate",
            rust: RepeatOptions::every(Duration::from_millis(DAY))
                .limit(6)
                .offset(Duration::from_millis(1_000))
                .start_date(start),
            node: json!({"every": DAY, "limit": 6, "offset": 1_000, "startDate": start}),
            template: None,
        },
    ]
}

/// A hash's fields and values in the order Redis holds them (insertion order, for the small
/// hashes schedulers write).
async fn hash_in_order(key: &str) -> Vec<(String, String)> {
    redis::cmd("HGETALL")
        .arg(key)
        .query_async(&mut support::redis().await)
        .await
        .unwrap()
}

/// A sorted set's members with their scores, in order.
async fn scored(key: &str) -> Vec<(String, String)> {
    redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut support::redis().await)
        .await
        .unwrap()
}

/// Every key a producer's upsert left on queue `queue` but the event stream (whose entry ids
/// are clock readings): the keys' names, then each key's bytes; the iteration's clock
/// readings (`timestamp`, `delay`, and the delayed set's score, which is made of them) masked.
async fn upsert_bytes(prefix: &str, queue: &str) -> Vec<(String, Value)> {
    let base = format!("{prefix}:{queue}");
    let mut names: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{base}:*"))
        .query_async(&mut support::redis().await)
        .await
        .unwrap();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let short = name[base.len() + 1..].to_owned();
        let kind: String = redis::cmd("TYPE")
            .arg(&name)
            .query_async(&mut support::redis().await)
            .await
            .unwrap();
        let bytes = match (kind.as_str(), short.as_str()) {
            ("hash", _) if short.starts_with("repeat:sch:") => {
                let fields = hash_in_order(&name).await;
                let names: Vec<&String> = fields.iter().map(|(k, _)| k).collect();
                json!({"fields": names, "masked": without_clock(fields.iter().cloned().collect())})
            }
            ("hash", _) => json!(hash_in_order(&name).await),
            ("zset", "delayed") => {
                let members: Vec<String> = scored(&name).await.into_iter().map(|m| m.0).collect();
                json!(members)
            }
            ("zset", _) => json!(scored(&name).await),
            ("stream", "events") => json!("<clock>"),
            _ => {
                let value: redis::Value = redis::cmd("DUMP")
                    .arg(&name)
                    .query_async(&mut support::redis().await)
                    .await
                    .unwrap();
                json!(format!("{kind}: {value:?}"))
            }
        };
        out.push((short, bytes));
    }
    out
}

/// Issue 24: for every scheduler kind and several caller orders, a Rust producer setting the
/// schedule (and the template's options) in the order a Node.js caller writes them leaves the
/// bytes Node.js leaves: the scheduler hash, the `repeat` set, the iteration's job hash (`opts`
/// as text, its `repeat` included) and the delayed set's member, and the queue's meta.
#[tokio::test]
async fn schedules_set_in_a_callers_order_leave_nodes_bytes() {
    for order in caller_orders() {
        let prefix = support::unique_prefix();
        let _guard = support::PrefixGuard(prefix.clone());
        let schedulers = JobScheduler::new(backend(&prefix, "r").await);
        let template = order.template.as_ref().map(|t| t.0.clone());
        let made = schedulers
            .upsert("sch", &order.rust, template.unwrap_or_default())
            .await
            .unwrap();
        assert!(made.is_some(), "{}: an iteration", order.case);
        let (node_prefix, repeat) = (prefix.clone(), order.node.to_string());
        let template = order.template.as_ref().map(|t| t.1.to_string());
        tokio::task::spawn_blocking(move || {
            let mut env = vec![
                ("MODE", "upsert"),
                ("PREFIX", node_prefix.as_str()),
                ("QUEUES", "n"),
                ("ID", "sch"),
                ("REPEAT", repeat.as_str()),
            ];
            if let Some(template) = &template {
                env.push(("TEMPLATE", template));
            }
            support::run_node("scheduler-interop.mjs", &env)
        })
        .await
        .unwrap();
        let theirs = upsert_bytes(&prefix, "n").await;
        assert!(
            theirs.iter().any(|(k, _)| k.starts_with("repeat:sch:")),
            "{}: Node.js made an iteration: {theirs:?}",
            order.case
        );
        assert_eq!(upsert_bytes(&prefix, "r").await, theirs, "{}", order.case);
    }
}

/// R17: three workers (two Rust, one Node.js) on one queue, a Rust and a Node.js producer
/// upserting the same cron scheduler at once: every tick runs exactly once.
#[tokio::test]
async fn three_workers_and_two_producers_run_each_tick_exactly_once() {
    const UPSERTS: usize = 10;
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    let start = start_after(4_000);
    // Everything stops between two ticks, 5 ticks after the start.
    let until = start + 5_500;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rust_a = rust_worker(&prefix, "q", Arc::clone(&seen)).await;
    let rust_b = rust_worker(&prefix, "q", Arc::clone(&seen)).await;
    let node = node_workers(&prefix, "q", &[("UNTIL", until.to_string())]);
    tokio::join!(
        upsert(
            Runtime::Node,
            &prefix,
            &["q"],
            "tick",
            (Kind::Cron, start),
            UPSERTS
        ),
        upsert(
            Runtime::Rust,
            &prefix,
            &["q"],
            "tick",
            (Kind::Cron, start),
            UPSERTS
        ),
    );
    assert!(
        now_ms() < start,
        "the producers finished before the first tick"
    );
    // Fixed wait: the cron ticks come due in real time (the scheduler reads the wall clock); the
    // workers run them until `until`.
    tokio::time::sleep(Duration::from_millis(until.saturating_sub(now_ms()))).await;
    tokio::join!(rust_a.close(), rust_b.close());
    let node_out = node.await.unwrap();
    assert_eq!(node_out["errors"], json!([]), "Node.js worker errors");

    let by_node: Vec<String> = serde_json::from_value(node_out["processed"].clone()).unwrap();
    let by_rust = seen.lock().unwrap().clone();
    let mut all: Vec<String> = by_node.iter().chain(&by_rust).cloned().collect();
    all.sort();
    let expected: Vec<String> = slots(Kind::Cron, start, 10)
        .into_iter()
        .filter(|m| *m < until)
        .map(|m| format!("repeat:tick:{m}"))
        .collect();
    assert!(expected.len() >= 4, "{expected:?}");
    assert_eq!(
        all, expected,
        "one run per tick (Node.js ran {by_node:?}, Rust {by_rust:?})"
    );
    let key = format!("{prefix}:q");
    let mut completed = members(&key, "completed").await;
    completed.sort();
    assert_eq!(completed, expected);
    // Exactly one next iteration is pending: the next tick.
    let next = slots(Kind::Cron, start, 10)
        .into_iter()
        .find(|m| *m > until)
        .unwrap();
    let mut pending = members(&key, "delayed").await;
    let waiting: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("{key}:wait"))
        .arg(0)
        .arg(-1)
        .query_async(&mut support::redis().await)
        .await
        .unwrap();
    pending.extend(waiting);
    assert_eq!(pending, [format!("repeat:tick:{next}")]);
}
