//! `Queue::add`, `add_bulk` and the backend's `add_flow` on Redis: what Node.js users rely on.

mod support;

use std::time::Duration;

use bullmq::core::backend::{AddJobs, FlowNode, NewJob, ParentKeyOpts};
use bullmq::core::options::{Deduplication, ParentOptions};
use bullmq::core::{Error, ScriptErrorCode};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{BulkJob, Job, JobOptions, Prefix, Queue, QueueName};
use serde_json::json;

async fn queue(prefix: &str, name: &str) -> Queue<RedisBackend> {
    let options =
        RedisOptions::new(support::redis_url()).prefix(Prefix::new(prefix).expect("prefix"));
    let name = QueueName::new(name).expect("queue name");
    let backend = RedisBackend::connect(&options, name.clone())
        .await
        .expect("connect");
    Queue::new(name, backend)
}

async fn exists(key: &str) -> bool {
    let mut con = support::redis().await;
    redis::cmd("EXISTS")
        .arg(key)
        .query_async::<i64>(&mut con)
        .await
        .expect("EXISTS")
        == 1
}

async fn list(key: &str) -> Vec<String> {
    let mut con = support::redis().await;
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query_async(&mut con)
        .await
        .expect("LRANGE")
}

#[tokio::test]
async fn invalid_options_are_refused_before_anything_is_written() {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let q = queue(&prefix, "refuse").await;
    for opts in [
        JobOptions::new().priority(3_000_000),
        JobOptions::new().job_id("42"),
        JobOptions::new().size_limit(4),
    ] {
        let err = q
            .add("x", &json!({"too": "big"}), opts)
            .await
            .expect_err("refused");
        assert!(matches!(err, Error::Invalid(_)), "{err}");
    }
    // Not even the id counter moved.
    assert!(!exists(&format!("{prefix}:refuse:id")).await);
}

#[tokio::test]
async fn add_bulk_keeps_order_and_ids() {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let q = queue(&prefix, "bulk").await;
    let jobs: Vec<BulkJob<serde_json::Value>> = (0..250)
        .map(|i| BulkJob {
            name: format!("n{i}"),
            data: json!({ "i": i }),
            opts: JobOptions::new(),
        })
        .collect();
    let added = q.add_bulk(jobs).await.expect("add_bulk");
    let ids: Vec<String> = added.iter().map(|j| j.id.to_string()).collect();
    let expected: Vec<String> = (1..=250).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected);
    // FIFO: LPUSH, so the first job is at the right end.
    let wait = list(&format!("{prefix}:bulk:wait")).await;
    assert_eq!(wait.len(), 250);
    assert_eq!(wait.last().map(String::as_str), Some("1"));
    let mut con = support::redis().await;
    let data: String = redis::cmd("HGET")
        .arg(format!("{prefix}:bulk:7"))
        .arg("data")
        .query_async(&mut con)
        .await
        .expect("HGET");
    assert_eq!(data, r#"{"i":6}"#);
}

#[tokio::test]
async fn duplicates_and_deduplication_return_the_existing_job() {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let q = queue(&prefix, "dup").await;
    let a = q
        .add("a", &1, JobOptions::new().job_id("same"))
        .await
        .expect("add");
    let b = q
        .add("b", &2, JobOptions::new().job_id("same"))
        .await
        .expect("add again");
    assert_eq!((a.id.as_str(), b.id.as_str()), ("same", "same"));

    let dedup =
        || JobOptions::new().deduplication(Deduplication::new("d1").ttl(Duration::from_secs(60)));
    let first = q.add("d", &1, dedup()).await.expect("first");
    let second = q.add("d", &2, dedup()).await.expect("second");
    assert_eq!(first.id, second.id);
    assert_eq!(list(&format!("{prefix}:dup:wait")).await.len(), 2);
}

#[tokio::test]
async fn a_child_of_a_missing_parent_is_refused_with_upstreams_code() {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let q = queue(&prefix, "orphans").await;
    let parent = ParentOptions::new("nope", format!("{prefix}:parents"));
    let err = q
        .add("child", &json!({}), JobOptions::new().parent(parent))
        .await
        .expect_err("refused");
    match err {
        Error::Script(e) => {
            assert_eq!(e.code, ScriptErrorCode::ParentNotFound);
            assert_eq!(
                e.to_string(),
                format!("Missing key for parent job {prefix}:parents:nope. addJob")
            );
        }
        other => panic!("expected a script error, got {other}"),
    }
}

#[tokio::test]
async fn a_flow_adds_the_parent_waiting_for_its_children() {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let parents = queue(&prefix, "parents").await;
    let p = Prefix::new(&prefix).expect("prefix");
    let now = 1_700_000_000_000;
    let parent_job = Job::new(
        "report",
        "{}".into(),
        JobOptions::new().job_id("r1").with_node_defaults(),
        now,
    );
    let parent_key = format!("{prefix}:parents:r1");
    let child = |id: &str| {
        let opts = JobOptions::new()
            .job_id(id)
            .parent(ParentOptions::new("r1", format!("{prefix}:parents")))
            .with_node_defaults();
        FlowNode {
            entry: NewJob {
                job: Job::new("part", "{}".into(), opts, now),
                parent: ParentKeyOpts {
                    parent_key: Some(parent_key.clone()),
                    parent_dependencies_key: Some(format!("{parent_key}:dependencies")),
                    ..ParentKeyOpts::default()
                },
            },
            queue: QueueName::new("parts").expect("name"),
            prefix: p.clone(),
        }
    };
    let nodes = vec![
        FlowNode {
            entry: NewJob {
                job: parent_job,
                parent: ParentKeyOpts {
                    add_to_waiting_children: true,
                    ..ParentKeyOpts::default()
                },
            },
            queue: QueueName::new("parents").expect("name"),
            prefix: p.clone(),
        },
        child("c1"),
        child("c2"),
    ];
    let ids = parents.backend().add_flow(&nodes).await.expect("add_flow");
    let ids: Vec<String> = ids
        .into_iter()
        .map(|r| r.expect("added").to_string())
        .collect();
    assert_eq!(ids, ["r1", "c1", "c2"]);

    let mut con = support::redis().await;
    let score: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("{prefix}:parents:waiting-children"))
        .arg("r1")
        .query_async(&mut con)
        .await
        .expect("ZSCORE");
    assert!(score.is_some(), "the parent waits for its children");
    let mut deps: Vec<String> = redis::cmd("SMEMBERS")
        .arg(format!("{parent_key}:dependencies"))
        .query_async(&mut con)
        .await
        .expect("SMEMBERS");
    deps.sort();
    assert_eq!(
        deps,
        [format!("{prefix}:parts:c1"), format!("{prefix}:parts:c2")]
    );
    let mut children = list(&format!("{prefix}:parts:wait")).await;
    children.sort();
    assert_eq!(children, ["c1", "c2"]);
}

#[tokio::test]
async fn default_job_options_apply_under_a_jobs_own() {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let q = queue(&prefix, "defaults").await.default_job_options(
        JobOptions::new()
            .attempts(5)
            .remove_on_complete(bullmq::KeepJobs::RemoveAll),
    );
    let job = q
        .add("x", &json!({}), JobOptions::new().attempts(2))
        .await
        .expect("add");
    let mut con = support::redis().await;
    let opts: String = redis::cmd("HGET")
        .arg(format!("{prefix}:defaults:{}", job.id))
        .arg("opts")
        .query_async(&mut con)
        .await
        .expect("HGET");
    let opts: serde_json::Value = serde_json::from_str(&opts).expect("JSON");
    assert_eq!(opts, json!({"attempts": 2, "removeOnComplete": true}));
}
