//! Node.js BullMQ 6.7.6 and this crate on one sentinel-managed primary (issue 16), both ways:
//! Node.js (ioredis with `sentinels` and `name`) adds and Rust works, Rust adds and Node.js
//! works. Each side reads the other's jobs whole: name, data and return value.

use std::collections::BTreeMap;
use std::time::Duration;

use bullmq::redis::RedisBackend;
use bullmq::{
    ActiveJob, CancellationToken, JobId, JobOptions, JobState, Prefix, ProcessResult, Queue,
    QueueName, Worker, WorkerOptions,
};
use serde_json::{Value, json};
use support::wait::eventually;

use crate::counting::backend;
use crate::sentinels::{MASTER, Sentinels};
use crate::support;

const LIMIT: Duration = Duration::from_secs(30);
const JOBS: usize = 20;

/// Runs `cluster-op.mjs <op> <n>` on the queue `queue` under `prefix`, through the sentinels;
/// its JSON output.
async fn node(sentinels: &Sentinels, op: &str, prefix: &Prefix, queue: &str) -> Value {
    let addresses: Vec<String> = sentinels
        .sentinels
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    let (addresses, op, prefix, queue) = (
        addresses.join(","),
        op.to_owned(),
        prefix.to_string(),
        queue.to_owned(),
    );
    let out = tokio::task::spawn_blocking(move || {
        support::run_node_args(
            &["cluster-op.mjs", &op, &JOBS.to_string()],
            &[
                ("SENTINELS", &addresses),
                ("MASTER", MASTER),
                ("PREFIX", &prefix),
                ("QUEUE", &queue),
            ],
        )
    })
    .await
    .unwrap();
    serde_json::from_str(out.trim()).unwrap()
}

/// The job's return value, parsed.
async fn returned(queue: &Queue<RedisBackend>, id: &JobId) -> Value {
    let job = queue.get_job(id).await.unwrap().unwrap();
    serde_json::from_str(job.return_value.as_deref().unwrap_or("null")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_and_rust_share_a_queue_behind_sentinels_both_ways() {
    let _one = crate::one_at_a_time().await;
    let sentinels = Sentinels::start();
    let url = sentinels.url();
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    let queue = Queue::try_new(
        QueueName::new("interop").unwrap(),
        backend(&url, &prefix, "interop").await,
    )
    .expect("the backend is bound to this queue");

    // Node.js adds, Rust works.
    let ids: Vec<String> =
        serde_json::from_value(node(&sentinels, "add", &prefix, "interop").await).unwrap();
    assert_eq!(ids.len(), JOBS);
    let worker = Worker::new(
        QueueName::new("interop").unwrap(),
        backend(&url, &prefix, "interop").await,
        WorkerOptions::new().concurrency(5),
        |job: ActiveJob<RedisBackend>, _: CancellationToken| async move {
            let data: Value = serde_json::from_str(&job.data).unwrap_or(Value::Null);
            ProcessResult::Ok(json!({"by": "rust", "name": job.name, "data": data}))
        },
    )
    .await
    .unwrap();
    for (i, id) in ids.iter().enumerate() {
        let id = JobId::from(id.as_str());
        eventually("a Node.js job completes in Rust", LIMIT, || async {
            queue.job(id.clone()).get_state().await.unwrap() == Some(JobState::Completed)
        })
        .await;
        assert_eq!(
            returned(&queue, &id).await,
            json!({"by": "rust", "name": "from-node", "data": {"i": i}})
        );
        // On the primary the sentinels name.
        let key = format!("{prefix}:interop:{}", id.as_str());
        let exists = sentinels.cli(sentinels.named_primary(), &["EXISTS", &key]);
        assert_eq!(exists.trim(), "1");
    }
    worker.close().await;

    // Rust adds, Node.js works.
    let mut added = BTreeMap::new();
    for i in 0..JOBS {
        let job = queue
            .add("from-rust", &json!({"i": i}), JobOptions::new())
            .await
            .unwrap();
        added.insert(job.id.as_str().to_owned(), i);
    }
    let done: Vec<String> =
        serde_json::from_value(node(&sentinels, "work", &prefix, "interop").await).unwrap();
    let mut done_sorted = done.clone();
    done_sorted.sort();
    assert_eq!(done_sorted, added.keys().cloned().collect::<Vec<_>>());
    for (id, i) in &added {
        let id = JobId::from(id.as_str());
        assert_eq!(
            queue.job(id.clone()).get_state().await.unwrap(),
            Some(JobState::Completed)
        );
        assert_eq!(
            returned(&queue, &id).await,
            json!({"by": "node", "data": {"i": i}})
        );
    }
}
