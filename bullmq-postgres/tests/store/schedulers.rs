//! Only what is PostgreSQL-specific; the shared cases are the conformance suite's `schedulers.rs`.
//!
//! `Schedulers` on PostgreSQL: the scheduler row and iteration jobs upstream's functions write
//! for a scheduler upserted from Rust (compared with Node.js BullMQ's own for the same input),
//! advancing, reading, listing and removing schedulers, and the refusals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use crate::support::jobs::refused;
use crate::support::{TestSchema, admin};
use bullmq_core::backend::{
    AddJobSchedulerArgs, AddJobs, NextIterationArgs, ParentKeyOpts, Schedulers,
};
use bullmq_core::clock::ManualClock;
use bullmq_core::options::KeepJobs;
use bullmq_core::scheduling::{RepeatOptions, plan_iteration};
use bullmq_core::{Job, JobId, JobOptions, ScriptErrorCode};
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx;
use serde_json::{Value, json};

const T0: u64 = 1_700_000_000_000;

fn every(ms: u64) -> RepeatOptions {
    RepeatOptions {
        every: Some(Duration::from_millis(ms)),
        ..RepeatOptions::default()
    }
}

fn cron(pattern: &str) -> RepeatOptions {
    RepeatOptions {
        pattern: Some(pattern.to_owned()),
        ..RepeatOptions::default()
    }
}

/// The upsert arguments the scheduler crate builds for `schedule` at `now`.
fn upsert_args(id: &str, schedule: RepeatOptions, now: u64) -> AddJobSchedulerArgs {
    let template_opts = JobOptions::new().attempts(3);
    let plan = plan_iteration(id, &schedule, &template_opts, now)
        .unwrap()
        .expect("an iteration");
    AddJobSchedulerArgs {
        scheduler_id: id.to_owned(),
        next_millis: plan.next_millis.map_or(0, |n| n.max(now)),
        template_name: "report".to_owned(),
        template_data: r#"{"a":1}"#.to_owned(),
        template_opts,
        schedule,
        delayed_job_opts: plan.delayed_job_opts,
        producer_id: None,
    }
}

async fn backend_at(schema: &TestSchema, now: u64) -> PostgresBackend {
    schema.backend("q").await.with_clock(ManualClock::new(now))
}

/// A schema `tag` whose backend, at [`T0`], holds scheduler "tick" repeating every second:
/// the id of its first job and that job's delay.
async fn ticking(tag: &str) -> (TestSchema, PostgresBackend, JobId, Duration) {
    let schema = TestSchema::new(tag);
    let backend = backend_at(&schema, T0).await;
    let (id, delay) = backend
        .add_job_scheduler(&upsert_args("tick", every(1000), T0))
        .await
        .unwrap();
    (schema, backend, id, delay)
}

/// One row per table row, as JSON, of `table` in `schema` for queue `q`.
async fn rows(schema: &TestSchema, table: &str, order: &str) -> Vec<Value> {
    let mut conn = admin().await;
    sqlx::query_scalar(&format!(
        "SELECT row_to_json(t)::jsonb FROM {}.{table} t WHERE queue = 'q' ORDER BY {order}",
        schema.name().quoted()
    ))
    .fetch_all(&mut conn)
    .await
    .expect("read the rows")
}

async fn job_rows(schema: &TestSchema) -> Vec<Value> {
    rows(schema, "job", "abs(seq)").await
}

/// Leaves out what depends on the instant each runtime read its clock: the delay (Node reads
/// the clock again for the SQL's `now`). Also drops `opts.repeat.offset` when it is `null`:
/// Node writes the key for a cron schedule, core's options codec leaves an unset offset out
/// (both read back as no offset).
fn comparable(mut row: Value) -> Value {
    let row_map = row.as_object_mut().unwrap();
    row_map.remove("delay_ms");
    let opts = row_map["opts"].as_object_mut().unwrap();
    opts.remove("delay");
    if let Some(repeat) = opts.get_mut("repeat").and_then(Value::as_object_mut)
        && repeat.get("offset") == Some(&Value::Null)
    {
        repeat.remove("offset");
    }
    row
}

#[tokio::test]
async fn a_scheduler_upserted_from_rust_is_the_rows_node_writes() {
    let by_node = TestSchema::new("sched_node");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("node")
        .join("pg-add-twin.mjs");
    let spec = json!({
        "id": "yearly",
        "repeat": {"pattern": "0 0 1 1 *", "tz": "UTC"},
        "template": {"name": "new-year", "data": {"y": 1},
                     "opts": {"attempts": 2, "removeOnComplete": true}},
    });
    let env = [
        ("SCHEMA", by_node.as_str().to_owned()),
        ("QUEUE", "q".to_owned()),
        ("OP", "scheduler".to_owned()),
        ("SPEC", spec.to_string()),
    ];
    let out = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        support::run_node(script.to_str().unwrap(), &env)
    })
    .await
    .unwrap();
    let node_id = serde_json::from_str::<Value>(out.trim()).unwrap()["ids"][0].clone();
    let node_jobs = job_rows(&by_node).await;
    assert_eq!(node_jobs.len(), 1);
    // Node's clock when it planned the iteration.
    let now = node_jobs[0]["added_at_ms"].as_u64().unwrap();

    let by_rust = TestSchema::new("sched_rust");
    let backend = backend_at(&by_rust, now).await;
    let schedule = RepeatOptions {
        tz: Some("UTC".to_owned()),
        ..cron("0 0 1 1 *")
    };
    let template_opts = JobOptions::new()
        .attempts(2)
        .remove_on_complete(KeepJobs::RemoveAll);
    let plan = plan_iteration("yearly", &schedule, &template_opts, now)
        .unwrap()
        .unwrap();
    let next = plan.next_millis.unwrap();
    let args = AddJobSchedulerArgs {
        scheduler_id: "yearly".to_owned(),
        next_millis: next.max(now),
        template_name: "new-year".to_owned(),
        template_data: r#"{"y":1}"#.to_owned(),
        template_opts,
        schedule,
        delayed_job_opts: plan.delayed_job_opts,
        producer_id: None,
    };
    let (id, delay) = backend.add_job_scheduler(&args).await.unwrap();
    assert_eq!(json!(id.as_str()), node_id);
    assert_eq!(id.as_str(), format!("repeat:yearly:{next}"));
    assert_eq!(delay, Duration::from_millis(next - now));

    assert_eq!(
        rows(&by_rust, "scheduler", "scheduler_id").await,
        rows(&by_node, "scheduler", "scheduler_id").await
    );
    let rust_jobs = job_rows(&by_rust).await;
    assert_eq!(
        rust_jobs.into_iter().map(comparable).collect::<Vec<_>>(),
        node_jobs.into_iter().map(comparable).collect::<Vec<_>>()
    );

    // Node's reading of the row, field by field, is the record we read.
    let record = backend.get_job_scheduler("yearly").await.unwrap().unwrap();
    assert_eq!(record.name, "new-year");
    assert_eq!(record.next_millis, Some(next));
    assert_eq!(record.iteration_count, 1);
    assert_eq!(record.schedule.pattern.as_deref(), Some("0 0 1 1 *"));
    assert_eq!(record.schedule.tz.as_deref(), Some("UTC"));
    assert_eq!(record.template_data.as_deref(), Some(r#"{"y":1}"#));
    let opts = record.template_opts.unwrap();
    assert_eq!(opts.attempts, Some(2));
    assert_eq!(opts.remove_on_complete, Some(KeepJobs::RemoveAll));
}

#[tokio::test]
async fn an_every_scheduler_is_stored_read_listed_and_counted() {
    let (schema, backend, id, delay) = ticking("sched_every").await;
    let record = backend.get_job_scheduler("tick").await.unwrap().unwrap();
    let next = record.next_millis.unwrap();
    assert_eq!(id.as_str(), format!("repeat:tick:{next}"));
    assert_eq!(delay, Duration::from_millis(next.saturating_sub(T0)));
    assert_eq!(record.id, "tick");
    assert_eq!(record.name, "report");
    assert_eq!(record.schedule.every, Some(Duration::from_secs(1)));
    assert_eq!(record.iteration_count, 1);
    assert_eq!(record.template_data.as_deref(), Some(r#"{"a":1}"#));
    assert_eq!(record.template_opts.unwrap().attempts, Some(3));

    let jobs = job_rows(&schema).await;
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["id"], id.as_str());
    assert_eq!(jobs[0]["scheduler_id"], "tick");
    assert_eq!(jobs[0]["data"], json!({"a": 1}));
    assert_eq!(jobs[0]["max_attempts"], 3);

    assert!(backend.is_job_scheduler("tick").await.unwrap());
    assert!(!backend.is_job_scheduler("tock").await.unwrap());
    assert!(backend.get_job_scheduler("tock").await.unwrap().is_none());

    // A second scheduler runs later (a cron slot a year away).
    let late = upsert_args("late", cron("0 0 1 1 *"), T0);
    let late_next = late.next_millis;
    backend.add_job_scheduler(&late).await.unwrap();
    assert_eq!(backend.get_job_schedulers_count().await.unwrap(), 2);
    assert_eq!(
        backend.get_job_schedulers_range(0, -1, true).await.unwrap(),
        vec![("tick".to_owned(), next), ("late".to_owned(), late_next)]
    );
    assert_eq!(
        backend.get_job_schedulers_range(0, 0, false).await.unwrap(),
        vec![("late".to_owned(), late_next)]
    );
    assert_eq!(
        backend.get_job_schedulers_range(1, 5, true).await.unwrap(),
        vec![("late".to_owned(), late_next)]
    );
    assert!(
        backend
            .get_job_schedulers_range(3, 1, true)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn only_the_current_iterations_producer_advances_a_scheduler() {
    let (schema, backend, first, _) = ticking("sched_next").await;
    let next_args = |producer: &str| NextIterationArgs {
        scheduler_id: "tick".to_owned(),
        next_millis: 0,
        template_data: r#"{"a":1}"#.to_owned(),
        delayed_job_opts: JobOptions::new().attempts(3),
        producer_id: Some(producer.to_owned()),
    };
    assert_eq!(
        backend
            .update_job_scheduler_next_millis(&next_args("repeat:tick:1"))
            .await
            .unwrap(),
        None,
        "a stale producer"
    );
    let second = backend
        .update_job_scheduler_next_millis(&next_args(first.as_str()))
        .await
        .unwrap()
        .expect("the next iteration");
    assert_ne!(second, first);
    let record = backend.get_job_scheduler("tick").await.unwrap().unwrap();
    assert_eq!(record.iteration_count, 2);
    assert_eq!(
        second.as_str(),
        format!("repeat:tick:{}", record.next_millis.unwrap())
    );
    assert_eq!(job_rows(&schema).await.len(), 2);

    // The first iteration's producer cannot add another one.
    assert_eq!(
        backend
            .update_job_scheduler_next_millis(&next_args(first.as_str()))
            .await
            .unwrap(),
        None
    );
    let mut gone = next_args(second.as_str());
    gone.scheduler_id = "gone".to_owned();
    assert_eq!(
        backend
            .update_job_scheduler_next_millis(&gone)
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn a_taken_iteration_slot_is_refused_as_node_refuses_it() {
    let schema = TestSchema::new("sched_collide");
    let backend = backend_at(&schema, T0).await;
    let args = upsert_args("late", cron("0 0 1 1 *"), T0);
    // A job already holds the slot's id, and it is not the scheduler's previous iteration.
    let squatter = Job::new(
        "squatter",
        "{}".to_owned(),
        JobOptions::new().job_id(format!("repeat:late:{}", args.next_millis)),
        T0,
    );
    backend
        .add_job(&squatter, &ParentKeyOpts::default())
        .await
        .unwrap();
    let err = refused(
        backend.add_job_scheduler(&args).await,
        ScriptErrorCode::SchedulerJobIdCollision,
    );
    assert_eq!(err.command, "addJobScheduler");
    assert!(
        !backend.is_job_scheduler("late").await.unwrap(),
        "rolled back"
    );

    // An `every` schedule tries the following slot, and gives up when that is taken too.
    let tick = upsert_args("tick", every(1000), T0);
    let (id, _) = backend.add_job_scheduler(&tick).await.unwrap();
    assert!(backend.remove_job_scheduler("tick").await.unwrap());
    let next: u64 = id.as_str().rsplit(':').next().unwrap().parse().unwrap();
    for slot in [next, next + 1000] {
        let job = Job::new(
            "squatter",
            "{}".to_owned(),
            JobOptions::new().job_id(format!("repeat:tick:{slot}")),
            T0,
        );
        let added = backend
            .add_job(&job, &ParentKeyOpts::default())
            .await
            .unwrap();
        assert_eq!(added, JobId::from(format!("repeat:tick:{slot}")));
    }
    refused(
        backend.add_job_scheduler(&tick).await,
        ScriptErrorCode::SchedulerJobSlotsBusy,
    );
}
