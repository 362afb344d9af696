//! Jobs added by Rust's `Queue` on Redis are the same as their twins added by Node.js BullMQ
//! 6.7.6: for every option set of the golden corpus, the job hash holds the same fields with the
//! same bytes, and the job sits in the same state.

use crate::support;

use std::collections::BTreeMap;

use crate::corpus::expected;
use bullmq::options::ParentOptions;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{Prefix, Queue, QueueName};
use serde_json::json;

#[derive(Debug, serde::Deserialize)]
struct Golden {
    name: String,
    queue: Option<String>,
    #[serde(rename = "jobId")]
    job_id: Option<String>,
    rejected: Option<String>,
}

type Hash = BTreeMap<String, Vec<u8>>;

async fn hash(con: &mut redis::aio::MultiplexedConnection, key: &str) -> Hash {
    redis::cmd("HGETALL")
        .arg(key)
        .query_async(con)
        .await
        .expect("HGETALL")
}

/// The sets and lists a freshly added job can be in, and whether it is in each.
async fn placement(
    con: &mut redis::aio::MultiplexedConnection,
    queue_key: &str,
    id: &str,
) -> Vec<(&'static str, bool)> {
    let places = [
        ("wait", "LPOS"),
        ("paused", "LPOS"),
        ("prioritized", "ZSCORE"),
        ("delayed", "ZSCORE"),
        ("waiting-children", "ZSCORE"),
    ];
    let mut out = Vec::new();
    for (place, find) in places {
        // The list position or set score, nil where the job is not.
        let found: redis::Value = redis::cmd(find)
            .arg(format!("{queue_key}:{place}"))
            .arg(id)
            .query_async(con)
            .await
            .expect(find);
        out.push((place, found != redis::Value::Nil));
    }
    out
}

#[tokio::test]
async fn jobs_added_by_rust_equal_their_node_twins() {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let out = support::run_node(
        "opts-golden.mjs",
        &[("GOLDEN_PREFIX", &prefix), ("GOLDEN_KEEP", "1")],
    );
    let cases: Vec<Golden> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let parent = ParentOptions::new("golden-parent", format!("{prefix}:parentq"));
    let options =
        RedisOptions::new(support::redis_url()).prefix(Prefix::new(&prefix).expect("prefix"));
    let base = RedisBackend::connect(&options, QueueName::new("r").expect("name"))
        .await
        .expect("connect");
    let mut con = support::redis().await;

    let mut compared = 0;
    for (i, case) in cases.iter().filter(|c| c.rejected.is_none()).enumerate() {
        let name = case.name.as_str();
        let opts =
            expected(name, &parent).unwrap_or_else(|| panic!("no Rust expectation for {name}"));
        let given_timestamp = opts.timestamp.is_some();
        let queue_name = QueueName::new(format!("r{i}")).expect("name");
        let queue = Queue::try_new(queue_name.clone(), base.sibling(queue_name, None))
            .expect("the backend is bound to this queue");
        let job = queue
            .add("golden", &json!({}), opts)
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));

        let node_id = case.job_id.as_deref().expect("jobId");
        assert_eq!(job.id.as_str(), node_id, "{name}: job id");
        let node_queue = format!("{prefix}:{}", case.queue.as_deref().expect("queue"));
        let rust_queue = format!("{prefix}:r{i}");
        let mut theirs = hash(&mut con, &format!("{node_queue}:{node_id}")).await;
        let mut ours = hash(&mut con, &format!("{rust_queue}:{}", job.id)).await;
        if !given_timestamp {
            // Each runtime stamps its own job with its own clock.
            assert!(
                theirs.remove("timestamp").is_some() && ours.remove("timestamp").is_some(),
                "{name}"
            );
        }
        if name == "repeatjobkey-stripped" {
            // `repeatJobKey` is set by job schedulers, not by `add`; only Node's twin has it.
            assert_eq!(theirs.remove("rjk").as_deref(), Some(&b"sched-2"[..]));
        }
        assert_eq!(ours, theirs, "{name}: job hash fields");
        assert_eq!(
            placement(&mut con, &rust_queue, job.id.as_str()).await,
            placement(&mut con, &node_queue, node_id).await,
            "{name}: where the job is"
        );
        if i == 0 {
            // Both queues' meta hashes, as each runtime's `Queue` writes them on start.
            let theirs = hash(&mut con, &format!("{node_queue}:meta")).await;
            let ours = hash(&mut con, &format!("{rust_queue}:meta")).await;
            assert_eq!(ours, theirs, "meta");
            assert_eq!(
                ours.get("version").map(Vec::as_slice),
                Some(&b"bullmq:6.7.6"[..])
            );
        }
        compared += 1;
    }
    assert!(compared >= 40, "only {compared} cases compared");
}
