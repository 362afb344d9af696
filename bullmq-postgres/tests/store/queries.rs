//! Only what is PostgreSQL-specific; the shared cases are the conformance suite's `queries.rs`.
//!
//! `Queries` on PostgreSQL, end to end: jobs are made and moved with upstream's own commands
//! (`add_job`, `add_flow`, `move_to_active`, …, with the parameters Node.js passes), then read
//! back through the trait.

use std::time::Duration;

use crate::support::TestSchema;
use crate::support::jobs::{self, AddJob, add_flow, flow_entry, id, move_to_active, now_ms};
use bullmq_core::backend::{DependenciesQuery, DependencyKind, Queries, Range};
use bullmq_core::job::{FinishedState, JobType};
use bullmq_core::{Error, JobId, JobState};
use bullmq_postgres::__private::sql::commands;
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Upstream commands, run as Node.js' PostgresQueueBackend runs them.
// ---------------------------------------------------------------------------------------------

fn q(b: &PostgresBackend) -> &str {
    b.queue().as_str()
}

fn ids(v: &[JobId]) -> Vec<&str> {
    v.iter().map(JobId::as_str).collect()
}

/// Node.js' `addJob` of job `job_id` (named `test-job`, data `{"n": <id>}`) with `opts`, at
/// `timestamp`.
async fn add_at(b: &PostgresBackend, job_id: &str, opts: Value, timestamp: i64) -> String {
    AddJob {
        name: "test-job",
        data: json!({ "n": job_id }),
        opts,
        timestamp,
        ..AddJob::new(job_id)
    }
    .add(b)
    .await
}

async fn add(b: &PostgresBackend, job_id: &str, opts: Value) -> String {
    add_at(b, job_id, opts, now_ms()).await
}

/// One flow entry as Node.js' `toBatchEntry` builds it (named `flow-job`, data
/// `{"n": <id>}`), a root waiting for its children.
fn entry(queue: &str, job_id: &str, parent: Option<(&str, &str)>, opts: Value) -> Value {
    let mut e = flow_entry(queue, job_id, parent, parent.is_none());
    e["name"] = json!("flow-job");
    e["data"] = json!(json!({ "n": job_id }).to_string());
    e["opts"] = opts;
    e
}

/// `move_to_active` with Node.js' defaults (30 s lock, no limiter): the claimed job's id.
async fn activate(b: &PostgresBackend) -> Option<String> {
    move_to_active(b, "token", None, None).await
}

/// Claims the next job, asserting it is `expected`.
async fn activate_expect(b: &PostgresBackend, expected: &str) {
    assert_eq!(activate(b).await.as_deref(), Some(expected));
}

async fn complete(b: &PostgresBackend, job_id: &str, value: &Value) {
    jobs::complete(b, job_id, "token", &value.to_string(), now_ms()).await;
}

async fn fail(b: &PostgresBackend, job_id: &str, reason: &str) {
    jobs::fail(b, job_id, "token", reason, None, now_ms()).await;
}

async fn pause(b: &PostgresBackend, paused: bool) {
    sqlx::query(commands::PAUSE.text)
        .bind(q(b))
        .bind(paused)
        .execute(b.connection().pool())
        .await
        .expect("pause");
}

async fn collect_metrics(b: &PostgresBackend, kind: &str, max_points: i32, ts: i64) {
    sqlx::query(commands::COLLECT_METRICS.text)
        .bind(q(b))
        .bind(kind)
        .bind(max_points)
        .bind(ts)
        .execute(b.connection().pool())
        .await
        .expect("collect_metrics");
}

fn range(start: i64, end: i64, asc: bool) -> Range {
    Range { start, end, asc }
}

fn t(s: JobState) -> JobType {
    JobType::State(s)
}

// ---------------------------------------------------------------------------------------------
// States
// ---------------------------------------------------------------------------------------------

/// One job in every state: `active`, `completed` (`{"x":1}`), `failed` (`boom`), `waiting`,
/// `prioritized` (priority 3), `delayed`, and the flow parent `parent` waiting for `kid`.
async fn one_of_each(b: &PostgresBackend) {
    add(b, "active", json!({})).await;
    activate_expect(b, "active").await;
    add(b, "completed", json!({})).await;
    activate_expect(b, "completed").await;
    complete(b, "completed", &json!({ "x": 1 })).await;
    add(b, "failed", json!({})).await;
    activate_expect(b, "failed").await;
    fail(b, "failed", "boom").await;
    add(b, "waiting", json!({})).await;
    add(b, "prioritized", json!({ "priority": 3 })).await;
    add(b, "delayed", json!({ "delay": 60_000 })).await;
    let kids = b.sibling(bullmq_core::QueueName::new("kids").expect("queue name"));
    let flow = vec![
        entry(q(b), "parent", None, json!({})),
        entry(q(&kids), "kid", Some((q(b), "parent")), json!({})),
    ];
    assert_eq!(add_flow(b, flow).await, ["parent", "kid"]);
}

// ---------------------------------------------------------------------------------------------
// Jobs, deduplication, logs, rate limit
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn get_job_reads_the_row() {
    let (_schema, b) = TestSchema::with_backend("queries_get_job", "q").await;
    let before = now_ms();
    add(&b, "j1", json!({ "priority": 4, "attempts": 3 })).await;

    let job = b.get_job(&id("j1")).await.unwrap().expect("the job");
    assert_eq!(job.id.as_str(), "j1");
    assert_eq!(job.name, "test-job");
    let data: Value = serde_json::from_str(&job.data).unwrap();
    assert_eq!(data, json!({ "n": "j1" }));
    assert_eq!(job.priority, 4);
    assert_eq!(job.opts.attempts, Some(3));
    assert!(job.timestamp >= u64::try_from(before).unwrap());
    assert_eq!(job.attempts_made, 0);
    assert!(b.get_job(&id("nope")).await.unwrap().is_none());
}

#[tokio::test]
async fn get_deduplication_job_id_reads_live_keys_only() {
    let (_schema, b) = TestSchema::with_backend("queries_dedup", "q").await;
    add(&b, "kept", json!({ "deduplication": { "id": "d1" } })).await;
    // Added ten seconds ago with a one-second ttl: expired.
    add_at(
        &b,
        "gone",
        json!({ "deduplication": { "id": "d2", "ttl": 1000 } }),
        now_ms() - 10_000,
    )
    .await;
    add(
        &b,
        "live",
        json!({ "deduplication": { "id": "d3", "ttl": 60_000 } }),
    )
    .await;

    assert_eq!(
        b.get_deduplication_job_id("d1").await.unwrap(),
        Some(id("kept"))
    );
    assert_eq!(b.get_deduplication_job_id("d2").await.unwrap(), None);
    assert_eq!(
        b.get_deduplication_job_id("d3").await.unwrap(),
        Some(id("live"))
    );
    assert_eq!(b.get_deduplication_job_id("none").await.unwrap(), None);
}

#[tokio::test]
async fn get_rate_limit_ttl_reads_the_window() {
    let (_schema, b) = TestSchema::with_backend("queries_ttl", "q").await;
    // No window: -2 from the function, zero here.
    assert_eq!(b.get_rate_limit_ttl(None).await.unwrap(), Duration::ZERO);
    assert_eq!(b.get_rate_limit_ttl(Some(5)).await.unwrap(), Duration::ZERO);

    sqlx::query(commands::SET_RATE_LIMIT.text)
        .bind(q(&b))
        .bind(60_000_i64)
        .bind(now_ms())
        .execute(b.connection().pool())
        .await
        .expect("set_rate_limit");
    let ttl = b.get_rate_limit_ttl(None).await.unwrap();
    assert!(
        ttl > Duration::from_secs(50) && ttl <= Duration::from_secs(60),
        "{ttl:?}"
    );
    let ttl = b.get_rate_limit_ttl(Some(5)).await.unwrap();
    assert!(ttl > Duration::from_secs(50), "{ttl:?}");
}

// ---------------------------------------------------------------------------------------------
// Counts and ranges
// ---------------------------------------------------------------------------------------------

/// The counts per type and the delayed cut-off are the conformance suite's
/// `counts_per_type_and_per_priority`; here, what upstream's own `PAUSE` command leaves counted.
#[tokio::test]
async fn get_counts_keep_a_paused_queue_s_jobs_waiting() {
    let (_schema, b) = TestSchema::with_backend("queries_counts", "q").await;
    one_of_each(&b).await;
    add(&b, "waiting2", json!({})).await;

    // Pausing only sets the flag, so the waiting jobs still count as waiting (Node.js 6.7.6's
    // lookup; 6.7.0 counted them as `paused` and waiting as 0), prioritized ones too.
    pause(&b, true).await;
    assert_eq!(
        b.get_counts(
            &[
                t(JobState::Waiting),
                JobType::Wait,
                t(JobState::Prioritized)
            ],
            None
        )
        .await
        .unwrap(),
        [2, 2, 1]
    );
}

#[tokio::test]
async fn get_counts_per_priority_in_the_order_asked() {
    let (_schema, b) = TestSchema::with_backend("queries_per_priority", "q").await;
    add(&b, "a", json!({})).await;
    add(&b, "b", json!({ "priority": 1 })).await;
    add(&b, "c", json!({ "priority": 1 })).await;
    add(&b, "d", json!({ "priority": 5 })).await;
    add(&b, "e", json!({ "priority": 5, "delay": 60_000 })).await;

    assert_eq!(
        b.get_counts_per_priority(&[5, 0, 7, 1]).await.unwrap(),
        [1, 1, 0, 2]
    );
    assert!(b.get_counts_per_priority(&[]).await.unwrap().is_empty());
    // Pausing leaves them counted.
    pause(&b, true).await;
    assert_eq!(b.get_counts_per_priority(&[1]).await.unwrap(), [2]);
}

#[tokio::test]
async fn get_ranges_orders_slices_and_dedups() {
    let (_schema, b) = TestSchema::with_backend("queries_ranges", "q").await;
    for job in ["w1", "w2", "w3", "w4"] {
        add(&b, job, json!({})).await;
    }
    add(&b, "p1", json!({ "priority": 2 })).await;
    add(&b, "p2", json!({ "priority": 1 })).await;
    add(&b, "p3", json!({ "priority": 1 })).await;
    add(&b, "d1", json!({ "delay": 20_000 })).await;
    add(&b, "d2", json!({ "delay": 10_000 })).await;
    let waiting = [t(JobState::Waiting)];

    // Lists: newest first, oldest first when asked so.
    let all = b.get_ranges(&waiting, Range::ALL).await.unwrap();
    assert_eq!(ids(&all), ["w4", "w3", "w2", "w1"]);
    let asc = b.get_ranges(&waiting, range(0, -1, true)).await.unwrap();
    assert_eq!(ids(&asc), ["w1", "w2", "w3", "w4"]);
    let page = b.get_ranges(&waiting, range(1, 2, false)).await.unwrap();
    assert_eq!(ids(&page), ["w3", "w2"]);
    // As on Redis, oldest first pages from the oldest end (upstream's Node.js gives the two
    // newest here, turned around).
    let page = b.get_ranges(&waiting, range(0, 1, true)).await.unwrap();
    assert_eq!(ids(&page), ["w1", "w2"]);
    let page = b.get_ranges(&waiting, range(1, 2, true)).await.unwrap();
    assert_eq!(ids(&page), ["w2", "w3"]);
    // The function clamps a negative start and reads a negative end as the end.
    let page = b.get_ranges(&waiting, range(-2, -1, false)).await.unwrap();
    assert_eq!(ids(&page), ["w4", "w3", "w2", "w1"]);
    assert!(
        b.get_ranges(&waiting, range(3, 1, false))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        b.get_ranges(&waiting, range(10, 20, false))
            .await
            .unwrap()
            .is_empty()
    );

    // Sorted states honour the direction.
    let prioritized = [t(JobState::Prioritized)];
    let asc = b
        .get_ranges(&prioritized, range(0, -1, true))
        .await
        .unwrap();
    assert_eq!(ids(&asc), ["p2", "p3", "p1"]);
    // Upstream's `get_range` orders by `priority, seq DESC`: the direction turns only the
    // arrival order within a priority around.
    let desc = b.get_ranges(&prioritized, Range::ALL).await.unwrap();
    assert_eq!(ids(&desc), ["p3", "p2", "p1"]);
    let delayed = [t(JobState::Delayed)];
    let asc = b.get_ranges(&delayed, range(0, 0, true)).await.unwrap();
    assert_eq!(ids(&asc), ["d2"]);
    let desc = b.get_ranges(&delayed, Range::ALL).await.unwrap();
    assert_eq!(ids(&desc), ["d1", "d2"]);

    // Several types, in the order asked, an id met twice kept where first met.
    let mixed = [
        t(JobState::Delayed),
        JobType::Wait,
        t(JobState::Waiting),
        JobType::Repeat,
    ];
    let got = b.get_ranges(&mixed, range(0, -1, true)).await.unwrap();
    assert_eq!(ids(&got), ["d2", "d1", "w1", "w2", "w3", "w4"]);

    // Finished and active jobs.
    activate_expect(&b, "w1").await;
    activate_expect(&b, "w2").await;
    complete(&b, "w1", &json!(1)).await;
    let active = b
        .get_ranges(&[t(JobState::Active)], Range::ALL)
        .await
        .unwrap();
    assert_eq!(ids(&active), ["w2"]);
    let completed = b
        .get_ranges(&[t(JobState::Completed)], Range::ALL)
        .await
        .unwrap();
    assert_eq!(ids(&completed), ["w1"]);
}

// ---------------------------------------------------------------------------------------------
// Dependencies
// ---------------------------------------------------------------------------------------------

/// Parent `p` in queue `q` with children in queue `kids`: `c1` completed (`{"v":1}`), `c2`
/// failed and ignored (`nope`), `c3` failed with `failParentOnFailure` (`bad`), `c4` and `c5`
/// pending. Returns the children's queue.
async fn family(b: &PostgresBackend) -> PostgresBackend {
    let kids = b.sibling(bullmq_core::QueueName::new("kids").expect("queue name"));
    let parent = Some((q(b), "p"));
    let flow = vec![
        entry(q(b), "p", None, json!({})),
        entry(q(&kids), "c1", parent, json!({})),
        entry(
            q(&kids),
            "c2",
            parent,
            json!({ "ignoreDependencyOnFailure": true }),
        ),
        entry(
            q(&kids),
            "c3",
            parent,
            json!({ "failParentOnFailure": true }),
        ),
        entry(q(&kids), "c4", parent, json!({})),
        entry(q(&kids), "c5", parent, json!({})),
    ];
    add_flow(b, flow).await;
    activate_expect(&kids, "c1").await;
    complete(&kids, "c1", &json!({ "v": 1 })).await;
    activate_expect(&kids, "c2").await;
    fail(&kids, "c2", "nope").await;
    activate_expect(&kids, "c3").await;
    fail(&kids, "c3", "bad").await;
    kids
}

#[tokio::test]
async fn dependency_pages_walk_by_offset() {
    let (_schema, b) = TestSchema::with_backend("queries_dep_pages", "q").await;
    family(&b).await;
    let p = id("p");
    let page = |kind, cursor, count| DependenciesQuery {
        lists: vec![(kind, cursor, count)],
    };

    // A full page points past itself; the short one after it ends the walk. A page of
    // nothing is done. Only the list asked for is answered.
    let cases: [(u64, u64, &[&str], u64); 5] = [
        (0, 1, &["kids:c4"], 1),
        (1, 1, &["kids:c5"], 2),
        (2, 1, &[], 0),
        (0, 10, &["kids:c4", "kids:c5"], 0),
        (0, 0, &[], 0),
    ];
    for (cursor, count, ids, next) in cases {
        let got = b
            .get_dependencies(&p, &page(DependencyKind::Unprocessed, cursor, count))
            .await
            .unwrap();
        let ids = ids.iter().map(|id| (*id).to_owned()).collect();
        assert_eq!(got.unprocessed, Some((ids, next)), "from {cursor}, {count}");
        assert!(got.processed.is_none() && got.ignored.is_none() && got.failed.is_none());
    }

    // Every list at once.
    let all = b
        .get_dependencies(
            &p,
            &DependenciesQuery {
                lists: vec![
                    (DependencyKind::Processed, 0, 1),
                    (DependencyKind::Ignored, 0, 5),
                    (DependencyKind::Failed, 0, 5),
                    (DependencyKind::Unprocessed, 1, 5),
                ],
            },
        )
        .await
        .unwrap();
    assert_eq!(
        all.processed,
        Some((vec![("kids:c1".to_owned(), r#"{"v":1}"#.to_owned())], 1))
    );
    assert_eq!(
        all.ignored,
        Some((vec![("kids:c2".to_owned(), "nope".to_owned())], 0))
    );
    assert_eq!(all.failed, Some((vec!["kids:c3".to_owned()], 0)));
    assert_eq!(all.unprocessed, Some((vec!["kids:c5".to_owned()], 0)));
}

#[tokio::test]
async fn paginate_pages_processed_and_unprocessed_children() {
    let (_schema, b) = TestSchema::with_backend("queries_paginate", "q").await;
    let kids = b.sibling(bullmq_core::QueueName::new("kids").expect("queue name"));
    let parent = Some((q(&b), "p"));
    let mut flow = vec![entry(q(&b), "p", None, json!({}))];
    for child in ["a", "b", "c", "d", "e"] {
        flow.push(entry(q(&kids), child, parent, json!({})));
    }
    add_flow(&b, flow).await;
    for (child, value) in [("a", json!("A")), ("b", json!({ "b": 2 }))] {
        activate_expect(&kids, child).await;
        complete(&kids, child, &value).await;
    }
    let p = id("p");

    let page = b
        .paginate(&p, DependencyKind::Unprocessed, 0, u64::MAX, false)
        .await
        .unwrap();
    assert_eq!(page.cursor, 0);
    assert_eq!(page.total, 3);
    assert_eq!(
        page.items,
        [
            ("kids:c".to_owned(), None),
            ("kids:d".to_owned(), None),
            ("kids:e".to_owned(), None)
        ]
    );
    assert!(page.jobs.is_empty(), "jobs only when asked");

    let page = b
        .paginate(&p, DependencyKind::Unprocessed, 1, 1, true)
        .await
        .unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.items, [("kids:d".to_owned(), None)]);
    assert_eq!(page.jobs.len(), 1);
    assert_eq!(page.jobs[0].id.as_str(), "d");
    assert_eq!(page.jobs[0].parent_key.as_deref(), Some("q:p"));

    let page = b
        .paginate(&p, DependencyKind::Processed, 0, 5, true)
        .await
        .unwrap();
    assert_eq!(page.total, 2);
    assert_eq!(
        page.items,
        [
            ("kids:a".to_owned(), Some(r#""A""#.to_owned())),
            ("kids:b".to_owned(), Some(r#"{"b":2}"#.to_owned()))
        ]
    );
    let jobs: Vec<&str> = page.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(jobs, ["a", "b"]);
    assert_eq!(page.jobs[0].return_value.as_deref(), Some(r#""A""#));

    // Past the end, and an inverted range: empty pages (no row carries the total).
    let past = b
        .paginate(&p, DependencyKind::Unprocessed, 3, 10, true)
        .await
        .unwrap();
    assert!(past.items.is_empty() && past.jobs.is_empty());
    assert_eq!(past.total, 0);
    let inverted = b
        .paginate(&p, DependencyKind::Unprocessed, 2, 0, false)
        .await
        .unwrap();
    assert!(inverted.items.is_empty());

    // A child whose row is gone is listed without a job.
    sqlx::query("DELETE FROM job WHERE queue = 'kids' AND id = 'c'")
        .execute(b.connection().pool())
        .await
        .expect("delete a child row");
    let page = b
        .paginate(&p, DependencyKind::Unprocessed, 0, u64::MAX, true)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 3);
    let jobs: Vec<&str> = page.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(jobs, ["d", "e"]);

    // Upstream pages only those two lists.
    for kind in [DependencyKind::Ignored, DependencyKind::Failed] {
        let err = b.paginate(&p, kind, 0, 10, true).await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Unsupported {
                    operation: "paginate",
                    backend: "postgres"
                }
            ),
            "{err:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics and clients
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn get_metrics_slices_the_series() {
    let (_schema, b) = TestSchema::with_backend("queries_metrics", "q").await;
    let empty = b
        .get_metrics(FinishedState::Completed, 0, -1)
        .await
        .unwrap();
    assert_eq!(empty, bullmq_core::backend::Metrics::default());

    // Minute 10 sets the baseline, minute 11 records one job, minute 13 one more after an
    // empty minute: [0, 1, 1], newest first.
    let t0 = 10 * 60_000;
    collect_metrics(&b, "completed", 10, t0).await;
    collect_metrics(&b, "completed", 10, t0 + 60_000).await;
    collect_metrics(&b, "completed", 10, t0 + 180_000).await;
    collect_metrics(&b, "failed", 10, t0).await;

    let m = b
        .get_metrics(FinishedState::Completed, 0, -1)
        .await
        .unwrap();
    assert_eq!(m.data, [0, 1, 1]);
    assert_eq!(m.count, 3);
    assert_eq!(m.total, 3);
    assert_eq!(m.prev_ts, 13 * 60_000);
    assert_eq!(m.prev_count, 2);

    let slice = |start, end| b.get_metrics(FinishedState::Completed, start, end);
    assert_eq!(slice(0, 1).await.unwrap().data, [0, 1]);
    assert_eq!(slice(1, 1).await.unwrap().data, [1]);
    assert_eq!(slice(-1, -1).await.unwrap().data, [1]);
    let past = slice(5, 10).await.unwrap();
    assert!(past.data.is_empty());
    assert_eq!(past.count, 3, "the whole series' length");

    let failed = b.get_metrics(FinishedState::Failed, 0, -1).await.unwrap();
    assert_eq!((failed.total, failed.count), (1, 0));
    assert!(failed.data.is_empty());
}

#[tokio::test]
async fn get_client_list_keeps_this_queues_named_sessions() {
    let schema = TestSchema::new("queries_clients");
    // pg_stat_activity is server-wide: a queue name of its own keeps other tests out.
    let queue = format!("cl{}", uuid::Uuid::new_v4().simple());
    let b = schema.backend(&queue).await;
    assert!(b.get_client_list().await.unwrap().is_empty());

    let conn = b.connection();
    let named = [
        queue.clone(),
        format!("{queue}:w:alpha"),
        format!("{queue}:qe"),
    ];
    let others = [format!("{queue}x"), format!("other:w:{queue}")];
    let mut open = Vec::new();
    for name in named.iter().chain(&others) {
        open.push(
            conn.open_dedicated(Some(name))
                .await
                .expect("a named session"),
        );
    }

    let mut names: Vec<String> = b
        .get_client_list()
        .await
        .unwrap()
        .into_iter()
        .map(|c| {
            assert_eq!(c.raw, [("name".to_owned(), c.name.clone())]);
            c.name
        })
        .collect();
    names.sort();
    let mut expected = named.to_vec();
    expected.sort();
    assert_eq!(names, expected);

    drop(open);
}
