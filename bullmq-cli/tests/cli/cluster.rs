//! The same commands on the test Redis Cluster (a private one of six nodes, started on first
//! use), with a hash-tagged prefix so every key of the queues is in one slot.

use serde_json::json;

use crate::support::{bullmq, cluster_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commands_work_on_a_redis_cluster() {
    let url = cluster_url().await;
    let prefix = format!("{{{}}}", bullmq_test_support::unique_prefix());
    let run = |rest: &[&str]| {
        let mut args = vec!["--url", url.as_str(), "--prefix", prefix.as_str()];
        args.extend_from_slice(rest);
        bullmq(&args)
    };
    let added = run(&["add", "mail", "hello", "--data", r#"{"n":1}"#, "-o", "json"])
        .expect(0)
        .json();
    run(&["add", "sms", "hi", "-o", "json"]).expect(0);
    run(&["pause", "sms"]).expect(0);
    let queues = run(&["queues", "-o", "json"]).expect(0).json();
    let summary: Vec<_> = queues
        .as_array()
        .unwrap()
        .iter()
        .map(|q| json!([q["name"], q["paused"], q["counts"]["waiting"]]))
        .collect();
    assert_eq!(
        summary,
        [json!(["mail", false, 1]), json!(["sms", true, 1])]
    );
    let job = run(&["job", "mail", added["id"].as_str().unwrap(), "-o", "json"])
        .expect(0)
        .json();
    assert_eq!(
        (job["name"].as_str(), &job["data"]),
        (Some("hello"), &json!({"n": 1}))
    );
    let dry = run(&["drain", "mail", "--dry-run", "-o", "json"])
        .expect(0)
        .json();
    assert_eq!(dry["matched"], 1);
    for queue in ["mail", "sms"] {
        let gone = run(&["obliterate", queue, "--yes", "-o", "json"])
            .expect(0)
            .json();
        assert_eq!(gone["done"], 1, "{gone}");
    }
    let queues = run(&["queues", "-o", "json"]).expect(0).json();
    assert_eq!(queues, json!([]));
    // A prefix without a hash tag cannot hold a queue on a cluster: refused as a usage error
    // (the library says so before sending anything).
    let out = bullmq(&["--url", url.as_str(), "--prefix", "plain", "queues"]);
    let out = out.expect(2);
    assert!(out.stderr.contains("hash tag"), "{out:?}");
}
