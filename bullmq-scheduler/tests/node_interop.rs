//! Job schedulers against real Redis and Node.js bullmq 6.7.6: what Rust upserts Node reads
//! identically (and creates the same first job Node would), and the other way round.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use bullmq_core::options::UnixMillis;
use bullmq_core::scheduling::RepeatOptions;
use bullmq_core::{JobOptions, Prefix, Queue, QueueName};
use bullmq_redis::{RedisBackend, RedisOptions};
use bullmq_scheduler::{JobScheduler, JobTemplate, SchedulerError};
use bullmq_test_support::{PrefixGuard, now_ms, redis_url, run_node_json, unique_prefix};
use serde_json::{Value, json};

async fn backend(prefix: &str, queue: &str) -> RedisBackend {
    let options = RedisOptions::new(redis_url()).prefix(Prefix::new(prefix).unwrap());
    RedisBackend::connect(&options, QueueName::new(queue).unwrap())
        .await
        .unwrap()
}

/// Runs `node <args…>` in `tests/node` on queue `queue` under `prefix`; the JSON it prints.
fn node(args: &[&str], prefix: &str, queue: &str) -> Value {
    run_node_json(args, &[("PREFIX", prefix), ("QUEUE", queue)])
}

/// A job hash with its opts parsed, without the fields that depend on the instant of the call.
fn comparable_job(mut hash: Value) -> Value {
    let map = hash.as_object_mut().unwrap();
    map.remove("timestamp");
    map.remove("delay");
    let mut opts: Value = serde_json::from_str(map["opts"].as_str().unwrap()).unwrap();
    let o = opts.as_object_mut().unwrap();
    o.remove("timestamp");
    o.remove("delay");
    map.insert("opts".into(), opts);
    hash
}

/// Node's `getJobScheduler`, without `next` when it depends on the instant (`every`), nor the
/// `offset` the script derives from that instant when none was given.
fn comparable_scheduler(mut v: Value, keep_next: bool, given_offset: bool) -> Value {
    let map = v.as_object_mut().unwrap();
    if !keep_next {
        map.remove("next");
        if !given_offset {
            map.remove("offset");
        }
    }
    v
}

struct Case {
    id: &'static str,
    repeat_js: Value,
    repeat: RepeatOptions,
    template_js: Value,
    template: JobTemplate,
    /// The first slot is the same whenever the test runs (a monthly cron).
    stable_next: bool,
}

fn cases(now: u64) -> Vec<Case> {
    let end = now + 400 * 86_400_000;
    let start = now + 3_600_000;
    vec![
        Case {
            id: "every-offset",
            repeat_js: json!({"every": 60000, "offset": 300}),
            repeat: RepeatOptions {
                every: Some(Duration::from_secs(60)),
                offset: Some(Duration::from_millis(300)),
                ..RepeatOptions::default()
            },
            template_js: json!({"name": "tick", "data": {"a": 1}, "opts": {"attempts": 3}}),
            template: JobTemplate::named("tick")
                .data(json!({"a": 1}))
                .opts(JobOptions::new().attempts(3)),
            stable_next: false,
        },
        Case {
            id: "cron-tz",
            repeat_js: json!({"pattern": "0 12 1 * *", "tz": "Asia/Kolkata", "limit": 5, "endDate": end}),
            repeat: RepeatOptions::cron("0 12 1 * *")
                .tz("Asia/Kolkata")
                .limit(5)
                .end_date(end),
            template_js: json!({"name": "report", "data": {"b": [1, 2]}}),
            template: JobTemplate::named("report").data(json!({"b": [1, 2]})),
            stable_next: true,
        },
        Case {
            id: "cron-start",
            repeat_js: json!({"pattern": "30 2 1 * *", "tz": "America/New_York", "startDate": start}),
            repeat: RepeatOptions::cron("30 2 1 * *")
                .tz("America/New_York")
                .start_date(start),
            template_js: json!({}),
            template: JobTemplate::default(),
            stable_next: true,
        },
        Case {
            id: "every-immediately",
            repeat_js: json!({"every": 3_600_000, "immediately": true}),
            repeat: RepeatOptions {
                every: Some(Duration::from_secs(3600)),
                immediately: Some(true),
                ..RepeatOptions::default()
            },
            template_js: json!({"name": "hourly", "opts": {"removeOnComplete": 10}}),
            template: JobTemplate::named("hourly").opts(
                JobOptions::new().remove_on_complete(bullmq_core::options::KeepJobs::Number(10)),
            ),
            stable_next: false,
        },
    ]
}

#[tokio::test]
async fn rust_upserts_read_by_node_as_node_upserts() {
    let prefix = unique_prefix();
    let _guard = PrefixGuard(prefix.clone());
    let schedulers = JobScheduler::new(backend(&prefix, "rust").await);
    for case in cases(now_ms()) {
        let ours = schedulers
            .upsert(case.id, &case.repeat, case.template.clone())
            .await
            .unwrap()
            .expect("an iteration");
        let theirs = node(
            &[
                "scheduler-op.mjs",
                "upsert",
                case.id,
                &case.repeat_js.to_string(),
                &case.template_js.to_string(),
            ],
            &prefix,
            "node",
        );
        // The same scheduler read by Node, from either queue.
        let read_ours = node(&["scheduler-op.mjs", "get", case.id], &prefix, "rust");
        let read_theirs = node(&["scheduler-op.mjs", "get", case.id], &prefix, "node");
        assert_eq!(
            comparable_scheduler(read_ours, case.stable_next, case.repeat.offset.is_some()),
            comparable_scheduler(read_theirs, case.stable_next, case.repeat.offset.is_some()),
            "{}: getJobScheduler differs",
            case.id
        );
        // The first job: same id (for a stable slot), delay within the time between calls.
        let their_id = theirs["id"].as_str().unwrap();
        if case.stable_next {
            assert_eq!(ours.id.as_str(), their_id, "{}", case.id);
        }
        let their_delay = theirs["delay"].as_u64().unwrap();
        let our_delay = u64::try_from(ours.delay.as_millis()).unwrap();
        assert!(
            our_delay.abs_diff(their_delay) < 5_000 || !case.stable_next,
            "{}: delay {our_delay} vs Node {their_delay}",
            case.id
        );
        let our_job = node(
            &["scheduler-op.mjs", "jobHash", ours.id.as_str()],
            &prefix,
            "rust",
        );
        let their_job = node(&["scheduler-op.mjs", "jobHash", their_id], &prefix, "node");
        let (mut our_job, mut their_job) = (comparable_job(our_job), comparable_job(their_job));
        if !case.stable_next {
            for job in [&mut our_job, &mut their_job] {
                job["opts"].as_object_mut().unwrap().remove("jobId");
            }
        }
        assert_eq!(our_job, their_job, "{}: first job differs", case.id);
    }
    let count = node(&["scheduler-op.mjs", "count"], &prefix, "rust");
    assert_eq!(count, json!(4));
    assert_eq!(schedulers.count().await.unwrap(), 4);
}

#[tokio::test]
async fn node_upserts_read_by_rust() {
    let prefix = unique_prefix();
    let _guard = PrefixGuard(prefix.clone());
    let end = now_ms() + 100 * 86_400_000;
    let first = node(
        &[
            "scheduler-op.mjs",
            "upsert",
            "nightly",
            &json!({"pattern": "0 3 * * *", "tz": "Europe/London", "limit": 7, "endDate": end})
                .to_string(),
            &json!({"name": "report", "data": {"x": "y"}, "opts": {"attempts": 2, "keepLogs": 4}})
                .to_string(),
        ],
        &prefix,
        "q",
    );
    node(
        &[
            "scheduler-op.mjs",
            "upsert",
            "beat",
            &json!({"every": 5000}).to_string(),
        ],
        &prefix,
        "q",
    );
    let schedulers = JobScheduler::new(backend(&prefix, "q").await);
    let record = schedulers.get("nightly").await.unwrap().unwrap();
    assert_eq!(record.name, "report");
    assert_eq!(record.schedule.pattern.as_deref(), Some("0 3 * * *"));
    assert_eq!(record.schedule.tz.as_deref(), Some("Europe/London"));
    assert_eq!(record.schedule.limit, Some(7));
    assert_eq!(record.schedule.end_at().map(UnixMillis::get), Some(end));
    assert_eq!(record.iteration_count, 1);
    assert_eq!(record.template_data.as_deref(), Some(r#"{"x":"y"}"#));
    let opts = record.template_opts.unwrap();
    assert_eq!((opts.attempts, opts.keep_logs), (Some(2), Some(4)));
    // Node's first job is exactly the slot our engine computes for the stored schedule.
    let next = record.next_millis.unwrap();
    assert_eq!(first["id"], json!(format!("repeat:nightly:{next}")));
    let ours = bullmq_scheduler::next_cron_millis(&record.schedule, now_ms(), now_ms())
        .unwrap()
        .unwrap();
    assert_eq!(ours, next);

    let listed = schedulers.list(0, -1, true).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["beat", "nightly"]);
    let listed = schedulers.list(0, 0, false).await.unwrap();
    assert_eq!(listed[0].id, "nightly");
    assert_eq!(schedulers.count().await.unwrap(), 2);
    assert!(schedulers.remove("beat").await.unwrap());
    assert!(!schedulers.remove("beat").await.unwrap());
    assert_eq!(node(&["scheduler-op.mjs", "count"], &prefix, "q"), json!(1));
}

#[tokio::test]
async fn a_worker_advance_adds_the_next_cron_slot() {
    let prefix = unique_prefix();
    let _guard = PrefixGuard(prefix.clone());
    let backend = backend(&prefix, "adv").await;
    let schedulers = JobScheduler::new(backend.clone());
    let schedule = RepeatOptions {
        pattern: Some("0 0 1 * *".into()),
        tz: Some("Australia/Lord_Howe".into()),
        ..RepeatOptions::default()
    };
    let first = schedulers
        .upsert("monthly", &schedule, JobTemplate::named("m"))
        .await
        .unwrap()
        .unwrap();
    let queue = Queue::try_new(QueueName::new("adv").unwrap(), backend)
        .expect("the backend is bound to this queue");
    let job = queue.get_job(&first.id).await.unwrap().unwrap();
    let prev = job.opts.prev_millis.unwrap();
    let next = schedulers
        .advance(&job)
        .await
        .unwrap()
        .expect("next iteration");
    let expected = bullmq_scheduler::next_cron_millis(&schedule, prev, now_ms())
        .unwrap()
        .unwrap();
    assert_eq!(next.as_str(), format!("repeat:monthly:{expected}"));
    // Node reads the advanced scheduler: iteration 2, next slot.
    let read = node(&["scheduler-op.mjs", "get", "monthly"], &prefix, "adv");
    assert_eq!(read["iterationCount"], json!(2));
    assert_eq!(read["next"], json!(expected));
}

#[tokio::test]
async fn bad_schedules_are_refused_before_anything_is_written() {
    let prefix = unique_prefix();
    let _guard = PrefixGuard(prefix.clone());
    let schedulers = JobScheduler::new(backend(&prefix, "bad").await);
    let every = |ms| RepeatOptions {
        every: Some(Duration::from_millis(ms)),
        ..RepeatOptions::default()
    };
    let cron = |p: &str| RepeatOptions {
        pattern: Some(p.into()),
        ..RepeatOptions::default()
    };
    let refused = async |s: RepeatOptions| {
        schedulers
            .upsert("s", &s, JobTemplate::default())
            .await
            .unwrap_err()
    };
    let both = RepeatOptions {
        pattern: Some("* * * * *".into()),
        ..every(1000)
    };
    assert!(matches!(
        refused(both).await,
        SchedulerError::EveryAndPattern
    ));
    assert!(matches!(
        refused(every(0)).await,
        SchedulerError::NoSchedule
    ));
    assert!(matches!(
        refused(cron("* * * * * * *")).await,
        SchedulerError::Cron(_)
    ));
    assert!(matches!(
        refused(cron("61 * * * *")).await,
        SchedulerError::Cron(_)
    ));
    let err = refused(RepeatOptions {
        tz: Some("Mars/Olympus".into()),
        ..cron("0 0 * * *")
    })
    .await;
    assert!(
        err.to_string()
            .contains("unknown time zone \"Mars/Olympus\""),
        "{err}"
    );
    let now = now_ms();
    let reversed = cron("0 0 * * *")
        .start_date(now + 10_000)
        .end_date(now + 5_000);
    assert!(matches!(
        refused(reversed).await,
        SchedulerError::EndBeforeStart { .. }
    ));
    let past = every(1000).end_date(now - 5_000);
    assert!(matches!(
        refused(past).await,
        SchedulerError::EndDateInPast { .. }
    ));
    assert_eq!(schedulers.count().await.unwrap(), 0);
}
