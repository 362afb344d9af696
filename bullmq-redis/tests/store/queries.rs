//! Only what is Redis-specific; the shared cases are the conformance suite's `queries.rs`.
//!
//! `Queries` on the real Redis: each answer checked against the keys the scripts (or the raw
//! commands standing in for a worker) wrote.

use crate::support::readers as support;

use std::time::Duration;

use bullmq_core::backend::{
    Dependencies, DependenciesQuery, DependencyKind, FinishStatus, JobLogs, Metrics, Queries, Range,
};
use bullmq_core::job::{FinishedState, JobType};
use bullmq_core::{Error, JobId, JobOptions, JobState};
use bullmq_test_support::DEPENDENCY_KINDS;
use support::{Ctx, T0};

fn id(s: &str) -> JobId {
    JobId::from(s)
}

fn range(start: i64, end: i64, asc: bool) -> Range {
    Range { start, end, asc }
}

/// Jobs 1 (waiting), 2 (delayed 5 s) and 3 (prioritized 3) added through the scripts, and ids
/// a worker would have put in the other states.
async fn every_state(ctx: &Ctx) {
    ctx.add(1, JobOptions::new()).await;
    ctx.add(2, JobOptions::new().delay(Duration::from_secs(5)))
        .await;
    ctx.add(3, JobOptions::new().priority(3)).await;
    ctx.exec("LPUSH", &[&ctx.key("active"), "a"]);
    ctx.exec("LPUSH", &[&ctx.key("paused"), "p"]);
    ctx.exec("ZADD", &[&ctx.key("completed"), "1", "c"]);
    ctx.exec("ZADD", &[&ctx.key("failed"), "1", "f"]);
    ctx.exec("ZADD", &[&ctx.key("waiting-children"), "1", "wc"]);
}

#[tokio::test]
async fn get_state_names_the_set_that_holds_the_job() {
    let ctx = Ctx::new().await;
    every_state(&ctx).await;
    let expected = [
        ("1", Some(JobState::Waiting)),
        ("2", Some(JobState::Delayed)),
        ("3", Some(JobState::Prioritized)),
        ("a", Some(JobState::Active)),
        ("p", Some(JobState::Waiting)),
        ("c", Some(JobState::Completed)),
        ("f", Some(JobState::Failed)),
        ("wc", Some(JobState::WaitingChildren)),
        ("nope", None),
    ];
    for (job, state) in expected {
        assert_eq!(
            ctx.backend.get_state(&id(job)).await.unwrap(),
            state,
            "{job}"
        );
    }
}

#[tokio::test]
async fn is_job_in_state_looks_in_that_state_only() {
    let ctx = Ctx::new().await;
    every_state(&ctx).await;
    let holders = [
        ("1", JobState::Waiting),
        ("p", JobState::Waiting),
        ("2", JobState::Delayed),
        ("3", JobState::Prioritized),
        ("a", JobState::Active),
        ("c", JobState::Completed),
        ("f", JobState::Failed),
        ("wc", JobState::WaitingChildren),
    ];
    for (job, state) in holders {
        for other in JobState::ALL {
            let found = ctx.backend.is_job_in_state(other, &id(job)).await.unwrap();
            assert_eq!(found, other == state, "{job} in {other}");
        }
    }
}

#[tokio::test]
async fn is_finished_reports_the_outcome_with_its_value() {
    let ctx = Ctx::new().await;
    let b = &ctx.backend;
    assert_eq!(
        b.is_finished(&id("9")).await.unwrap(),
        FinishStatus::Missing
    );
    let job = ctx.add(1, JobOptions::new()).await;
    assert_eq!(b.is_finished(&job.id).await.unwrap(), FinishStatus::Pending);

    ctx.exec("HSET", &[&ctx.key("1"), "returnvalue", r#"{"ok":1}"#]);
    ctx.exec("ZADD", &[&ctx.key("completed"), "1", "1"]);
    assert_eq!(
        b.is_finished(&job.id).await.unwrap(),
        FinishStatus::Completed(Some(r#"{"ok":1}"#.to_owned()))
    );

    let job = ctx.add(2, JobOptions::new()).await;
    ctx.exec("HSET", &[&ctx.key("2"), "failedReason", "boom"]);
    ctx.exec("ZADD", &[&ctx.key("failed"), "1", "2"]);
    assert_eq!(
        b.is_finished(&job.id).await.unwrap(),
        FinishStatus::Failed(Some("boom".to_owned()))
    );
}

#[tokio::test]
async fn is_maxed_compares_active_jobs_with_the_global_concurrency() {
    let ctx = Ctx::new().await;
    let b = &ctx.backend;
    ctx.exec("LPUSH", &[&ctx.key("active"), "a", "b"]);
    assert!(!b.is_maxed().await.unwrap(), "no global concurrency");
    ctx.exec("HSET", &[&ctx.key("meta"), "concurrency", "2"]);
    assert!(b.is_maxed().await.unwrap());
    ctx.exec("HSET", &[&ctx.key("meta"), "concurrency", "3"]);
    assert!(!b.is_maxed().await.unwrap());
}

#[tokio::test]
async fn get_job_reads_the_hash_and_refuses_a_broken_one() {
    let ctx = Ctx::new().await;
    let added = ctx
        .add(
            7,
            JobOptions::new().attempts(3).delay(Duration::from_secs(2)),
        )
        .await;
    let job = ctx
        .backend
        .get_job(&added.id)
        .await
        .unwrap()
        .expect("a job");
    assert_eq!(job.id, id("1"));
    assert_eq!(job.name, "job");
    assert_eq!(job.data, r#"{"n":7}"#);
    assert_eq!(job.opts.attempts, Some(3));
    assert_eq!(job.timestamp, T0);
    assert_eq!(job.delay, Duration::from_secs(2));

    assert_eq!(ctx.backend.get_job(&id("404")).await.unwrap(), None);

    ctx.exec("HSET", &[&ctx.key("1"), "timestamp", "soon"]);
    match ctx.backend.get_job(&added.id).await {
        Err(Error::JobDecode(e)) => {
            assert_eq!((e.job_id.as_str(), e.field), ("1", "timestamp"));
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[tokio::test]
async fn get_deduplication_job_id_reads_the_de_key() {
    let ctx = Ctx::new().await;
    let opts = JobOptions::new().deduplication(bullmq_core::options::Deduplication::new("d1"));
    let job = ctx.add(1, opts).await;
    let stored: String = ctx.cmd(redis::cmd("GET").arg(ctx.key("de:d1")));
    assert_eq!(stored, job.id.as_str());
    let b = &ctx.backend;
    assert_eq!(
        b.get_deduplication_job_id("d1").await.unwrap(),
        Some(job.id)
    );
    assert_eq!(b.get_deduplication_job_id("d2").await.unwrap(), None);
}

#[tokio::test]
async fn get_job_logs_slices_from_either_end() {
    let ctx = Ctx::new().await;
    ctx.exec("RPUSH", &[&ctx.key("1:logs"), "l0", "l1", "l2", "l3", "l4"]);
    let logs = |lines: &[&str]| JobLogs {
        logs: lines.iter().map(|l| (*l).to_owned()).collect(),
        count: 5,
    };
    let b = &ctx.backend;
    let j = id("1");
    assert_eq!(
        b.get_job_logs(&j, range(0, -1, true)).await.unwrap(),
        logs(&["l0", "l1", "l2", "l3", "l4"])
    );
    assert_eq!(
        b.get_job_logs(&j, range(1, 2, true)).await.unwrap(),
        logs(&["l1", "l2"])
    );
    assert_eq!(
        b.get_job_logs(&j, range(0, 1, false)).await.unwrap(),
        logs(&["l4", "l3"])
    );
    assert_eq!(
        b.get_job_logs(&j, Range::ALL).await.unwrap(),
        logs(&["l4", "l3", "l2", "l1", "l0"])
    );
    assert_eq!(
        b.get_job_logs(&id("2"), Range::ALL).await.unwrap(),
        JobLogs::default()
    );
}

#[tokio::test]
async fn get_rate_limit_ttl_reads_the_limiter_window() {
    let ctx = Ctx::new().await;
    let b = &ctx.backend;
    assert_eq!(b.get_rate_limit_ttl(None).await.unwrap(), Duration::ZERO);
    ctx.exec("SET", &[&ctx.key("limiter"), "5", "PX", "10000"]);
    let ttl = b.get_rate_limit_ttl(Some(5)).await.unwrap();
    assert!(
        ttl > Duration::from_secs(9) && ttl <= Duration::from_secs(10),
        "{ttl:?}"
    );
    // Under the limit: not limited.
    assert_eq!(b.get_rate_limit_ttl(Some(6)).await.unwrap(), Duration::ZERO);
    // No max given: the key's own TTL, until the queue's global limit says otherwise.
    assert!(b.get_rate_limit_ttl(None).await.unwrap() > Duration::from_secs(9));
    ctx.exec("HSET", &[&ctx.key("meta"), "max", "8"]);
    assert_eq!(b.get_rate_limit_ttl(None).await.unwrap(), Duration::ZERO);
    ctx.exec("HSET", &[&ctx.key("meta"), "max", "4"]);
    assert!(b.get_rate_limit_ttl(None).await.unwrap() > Duration::from_secs(9));
}

#[tokio::test]
async fn get_counts_counts_each_type_in_order() {
    let ctx = Ctx::new().await;
    ctx.add(1, JobOptions::new()).await;
    ctx.add(2, JobOptions::new()).await;
    ctx.add(3, JobOptions::new().delay(Duration::from_secs(5)))
        .await;
    ctx.add(4, JobOptions::new().priority(2)).await;
    ctx.exec(
        "ZADD",
        &[&ctx.key("completed"), "1", "c1", "2", "c2", "3", "c3"],
    );
    let types = [
        JobState::Waiting.into(),
        JobState::Delayed.into(),
        JobState::Prioritized.into(),
        JobState::Completed.into(),
        JobState::Active.into(),
        JobType::Wait,
    ];
    let b = &ctx.backend;
    assert_eq!(
        b.get_counts(&types, None).await.unwrap(),
        [2, 1, 1, 3, 0, 2]
    );
    let delayed = [JobState::Delayed.into()];
    assert_eq!(b.get_counts(&delayed, Some(T0 + 5000)).await.unwrap(), [0]);
    assert_eq!(b.get_counts(&delayed, Some(T0 + 5001)).await.unwrap(), [1]);
}

#[tokio::test]
async fn get_ranges_orders_lists_like_node_and_drops_repeats() {
    let ctx = Ctx::new().await;
    for n in 1..=3 {
        ctx.add(n, JobOptions::new()).await;
    }
    ctx.exec(
        "ZADD",
        &[&ctx.key("completed"), "10", "c1", "20", "c2", "30", "1"],
    );
    let ids = |v: &[&str]| v.iter().map(|s| id(s)).collect::<Vec<_>>();
    let b = &ctx.backend;
    let waiting = [JobState::Waiting.into()];
    assert_eq!(
        b.get_ranges(&waiting, Range::ALL).await.unwrap(),
        ids(&["3", "2", "1"])
    );
    assert_eq!(
        b.get_ranges(&waiting, range(0, -1, true)).await.unwrap(),
        ids(&["1", "2", "3"])
    );
    assert_eq!(
        b.get_ranges(&waiting, range(0, 0, true)).await.unwrap(),
        ids(&["1"])
    );
    let both = [JobState::Waiting.into(), JobState::Completed.into()];
    assert_eq!(
        b.get_ranges(&both, Range::ALL).await.unwrap(),
        ids(&["3", "2", "1", "c2", "c1"])
    );
    assert_eq!(
        b.get_ranges(&both, range(0, 1, true)).await.unwrap(),
        ids(&["1", "2", "c1", "c2"])
    );
}

/// Parent `p` with three processed, two unprocessed, one ignored and five failed children; the
/// unprocessed ones are real jobs (1 and 2). The parent's id, then the keys of jobs 1 and 2.
async fn family(ctx: &Ctx) -> (JobId, String, String) {
    let first = ctx.key("1");
    let second = ctx.key("2");
    ctx.add(1, JobOptions::new()).await;
    ctx.add(2, JobOptions::new()).await;
    let processed = ctx.key("p:processed");
    ctx.exec(
        "HSET",
        &[&processed, "k:a", "1", "k:b", r#"{"x":2}"#, "k:c", "null"],
    );
    ctx.exec("SADD", &[&ctx.key("p:dependencies"), &first, &second]);
    ctx.exec("HSET", &[&ctx.key("p:failed"), "k:i", "ignored reason"]);
    let unsuccessful = ctx.key("p:unsuccessful");
    for (score, child) in ["k:f1", "k:f2", "k:f3", "k:f4", "k:f5"].iter().enumerate() {
        ctx.exec("ZADD", &[&unsuccessful, &score.to_string(), child]);
    }
    (id("p"), first, second)
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn dependency_counts_and_children_values() {
    let ctx = Ctx::new().await;
    let (p, _, _) = family(&ctx).await;
    let b = &ctx.backend;
    assert_eq!(
        b.get_dependency_counts(&p, &DEPENDENCY_KINDS)
            .await
            .unwrap(),
        [5, 3, 2, 1]
    );
    assert_eq!(
        b.get_processed_children_values(&p).await.unwrap(),
        pairs(&[("k:a", "1"), ("k:b", r#"{"x":2}"#), ("k:c", "null")])
    );
    assert_eq!(
        b.get_ignored_children_failures(&p).await.unwrap(),
        pairs(&[("k:i", "ignored reason")])
    );
}

#[tokio::test]
async fn get_dependencies_reads_everything_or_one_page_per_list() {
    let ctx = Ctx::new().await;
    let (p, first, second) = family(&ctx).await;
    let b = &ctx.backend;
    let processed = pairs(&[("k:a", "1"), ("k:b", r#"{"x":2}"#), ("k:c", "null")]);

    let mut all = b
        .get_dependencies(&p, &DependenciesQuery::default())
        .await
        .unwrap();
    if let Some((unprocessed, _)) = all.unprocessed.as_mut() {
        unprocessed.sort();
    }
    assert_eq!(
        all,
        Dependencies {
            processed: Some((processed.clone(), 0)),
            unprocessed: Some((vec![first.clone(), second.clone()], 0)),
            ignored: Some((pairs(&[("k:i", "ignored reason")]), 0)),
            failed: Some((strings(&["k:f1", "k:f2", "k:f3", "k:f4", "k:f5"]), 0)),
        }
    );

    // Small hashes and sets come back whole from one scan, with the cursor at 0.
    let query = DependenciesQuery {
        lists: vec![
            (DependencyKind::Processed, 0, 2),
            (DependencyKind::Failed, 0, 2),
            (DependencyKind::Ignored, 0, 20),
        ],
    };
    let page = b.get_dependencies(&p, &query).await.unwrap();
    assert_eq!(page.processed, Some((processed, 0)));
    assert_eq!(page.failed, Some((strings(&["k:f1", "k:f2"]), 2)));
    assert_eq!(page.ignored, Some((pairs(&[("k:i", "ignored reason")]), 0)));
    assert_eq!(page.unprocessed, None);

    let failed_page = |cursor| DependenciesQuery {
        lists: vec![(DependencyKind::Failed, cursor, 2)],
    };
    let page = b.get_dependencies(&p, &failed_page(2)).await.unwrap();
    assert_eq!(page.failed, Some((strings(&["k:f3", "k:f4"]), 4)));
    let page = b.get_dependencies(&p, &failed_page(4)).await.unwrap();
    assert_eq!(page.failed, Some((strings(&["k:f5"]), 0)));
    let nothing = DependenciesQuery {
        lists: vec![(DependencyKind::Failed, 0, 0)],
    };
    let page = b.get_dependencies(&p, &nothing).await.unwrap();
    assert_eq!(page.failed, Some((Vec::new(), 0)));
}

#[tokio::test]
async fn paginate_pages_a_hash_or_a_set_with_the_jobs() {
    let ctx = Ctx::new().await;
    let (p, first, second) = family(&ctx).await;
    let b = &ctx.backend;

    let page = b
        .paginate(&p, DependencyKind::Processed, 0, 1, false)
        .await
        .unwrap();
    assert_eq!((page.cursor, page.total), (0, 3));
    assert_eq!(
        page.items,
        [
            ("k:a".to_owned(), Some("1".to_owned())),
            ("k:b".to_owned(), Some(r#"{"x":2}"#.to_owned())),
        ]
    );
    assert!(page.jobs.is_empty());

    let page = b
        .paginate(&p, DependencyKind::Processed, 1, u64::MAX, false)
        .await
        .unwrap();
    let keys: Vec<&str> = page.items.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["k:b", "k:c"]);

    let page = b
        .paginate(&p, DependencyKind::Unprocessed, 0, u64::MAX, true)
        .await
        .unwrap();
    assert_eq!(page.total, 2);
    let mut members: Vec<_> = page
        .items
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    members.sort();
    assert_eq!(members, [(first, None), (second, None)]);
    let mut data: Vec<_> = page
        .jobs
        .iter()
        .map(|j| (j.id.clone(), j.data.clone()))
        .collect();
    data.sort();
    assert_eq!(
        data,
        [
            (id("1"), r#"{"n":1}"#.to_owned()),
            (id("2"), r#"{"n":2}"#.to_owned())
        ]
    );

    let page = b
        .paginate(&id("none"), DependencyKind::Unprocessed, 0, u64::MAX, true)
        .await
        .unwrap();
    assert_eq!((page.total, page.items.len()), (0, 0));

    let refused = b.paginate(&p, DependencyKind::Failed, 0, 1, false).await;
    assert!(
        matches!(refused, Err(Error::Unsupported { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn get_metrics_reads_the_counters_and_data_points() {
    let ctx = Ctx::new().await;
    let meta = ctx.key("metrics:completed");
    ctx.exec(
        "HSET",
        &[
            &meta,
            "count",
            "10",
            "prevTS",
            "1700000000000",
            "prevCount",
            "7",
        ],
    );
    ctx.exec(
        "LPUSH",
        &[&ctx.key("metrics:completed:data"), "x", "2", "3"],
    );
    let b = &ctx.backend;
    assert_eq!(
        b.get_metrics(FinishedState::Completed, 0, -1)
            .await
            .unwrap(),
        Metrics {
            data: vec![3, 2, 0],
            count: 3,
            total: 10,
            prev_ts: 1_700_000_000_000,
            prev_count: 7,
        }
    );
    assert_eq!(
        b.get_metrics(FinishedState::Completed, 1, 1)
            .await
            .unwrap()
            .data,
        [2]
    );
    assert_eq!(
        b.get_metrics(FinishedState::Failed, 0, -1).await.unwrap(),
        Metrics::default()
    );
}
