//! Queue administration across runtimes: what Rust does to a queue, Node.js BullMQ 6.7.6 sees,
//! and the other way round.

use crate::support;
use crate::support::counts::state_counts;
use crate::support::delayed::add_delayed;

use std::time::Duration;

use bullmq::backend::{JobMutations, Transitions};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{JobId, JobOptions, JobState, Prefix, Queue, QueueName};
use serde_json::{Value, json};

struct Both {
    prefix: String,
    queue: Queue<RedisBackend>,
    _cleanup: support::PrefixGuard,
}

impl Both {
    async fn new(name: &str) -> Self {
        let prefix = support::unique_prefix();
        let options =
            RedisOptions::new(support::redis_url()).prefix(Prefix::new(&prefix).expect("prefix"));
        let queue_name = QueueName::new(name).expect("name");
        let backend = RedisBackend::connect(&options, queue_name.clone())
            .await
            .expect("connect");
        Self {
            _cleanup: support::PrefixGuard(prefix.clone()),
            prefix,
            queue: Queue::try_new(queue_name, backend).expect("the backend is bound to this queue"),
        }
    }

    /// Runs a Node.js queue operation on the same queue and returns its JSON result.
    fn node(&self, args: &[&str]) -> Value {
        let mut script = vec!["queue-op.mjs"];
        script.extend_from_slice(args);
        let out = support::run_node_args(
            &script,
            &[
                ("PREFIX", &self.prefix),
                ("QUEUE", self.queue.name().as_str()),
            ],
        );
        serde_json::from_str(out.trim()).expect("queue-op.mjs prints JSON")
    }
}

#[tokio::test]
async fn pause_and_resume_cross_runtimes() {
    let t = Both::new("pausing").await;
    t.queue.pause().await.expect("pause");
    assert_eq!(t.node(&["isPaused"]), json!(true));
    t.node(&["resume"]);
    assert!(!t.queue.is_paused().await.expect("is_paused"));
    t.node(&["pause"]);
    assert!(t.queue.is_paused().await.expect("is_paused"));
}

#[tokio::test]
async fn jobs_and_counts_cross_runtimes() {
    let t = Both::new("counting").await;
    let delayed = add_delayed(&t.queue, "later", Duration::from_secs(3600)).await;
    let prio = t
        .queue
        .add("urgent", &json!({"x": 1}), JobOptions::new().priority(5))
        .await
        .expect("add");
    let node_id = t.node(&["add", "from-node", r#"{"n":1}"#]);
    let node_id = JobId::from(node_id.as_str().expect("an id"));

    let counts = t.node(&["counts"]);
    assert_eq!(
        (
            counts["delayed"].as_u64(),
            counts["prioritized"].as_u64(),
            counts["waiting"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );

    // Node promotes Rust's delayed job; Rust changes the priority of its own job; each sees it.
    t.node(&["promote", delayed.id.as_str()]);
    assert_eq!(
        t.queue.get_job_state(&delayed.id).await.expect("state"),
        Some(JobState::Waiting)
    );
    t.queue
        .backend()
        .change_priority(&prio.id, 0, false)
        .await
        .expect("change_priority");
    assert_eq!(t.node(&["getState", prio.id.as_str()]), json!("waiting"));

    // Node reads Rust's job; Rust reads Node's.
    let job = t.node(&["getJob", prio.id.as_str()]);
    assert_eq!(
        (job["name"].as_str(), job["data"].as_str()),
        (Some("urgent"), Some(r#"{"x":1}"#))
    );
    let theirs = t
        .queue
        .get_job(&node_id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(
        (theirs.name.as_str(), theirs.data.as_str()),
        ("from-node", r#"{"n":1}"#)
    );

    // Rust removes a Node job; Node drains the rest.
    assert!(t.queue.remove(&node_id, false).await.expect("remove"));
    assert_eq!(t.node(&["getJob", node_id.as_str()]), Value::Null);
    t.node(&["drain", "delayed"]);
    assert_eq!(t.queue.count().await.expect("count"), 0);
}

#[tokio::test]
async fn clean_and_retry_cross_runtimes() {
    let t = Both::new("cleaning").await;
    // Finish two jobs by hand through the backend, as a worker would.
    let token = bullmq::backend::LockToken::new("t1");
    let fetch = bullmq::backend::FetchParams {
        token: token.clone(),
        lock_duration: Duration::from_secs(30),
        limiter: None,
        worker_name: None,
    };
    for i in 0..2 {
        t.queue
            .add("work", &json!({"i": i}), JobOptions::new())
            .await
            .expect("add");
        let next = t
            .queue
            .backend()
            .move_to_active(&fetch)
            .await
            .expect("move_to_active");
        let job = next.job.expect("a job").job.expect("decodes");
        let args = bullmq::backend::FailArgs {
            token: token.clone(),
            failed_reason: format!("bad {i}"),
            keep: bullmq::KeepJobs::KeepAll,
            fields: bullmq::backend::FieldUpdates::default(),
            worker: std::sync::Arc::default(),
            fetch_next: false,
        };
        t.queue
            .backend()
            .move_to_failed(&job, &args)
            .await
            .expect("move_to_failed");
    }
    assert_eq!(t.node(&["counts"])["failed"].as_u64(), Some(2));
    t.node(&["retryJobs", "failed"]);
    assert_eq!(state_counts(&t.queue, &[JobState::Failed]).await, [0]);
    assert_eq!(state_counts(&t.queue, &[JobState::Waiting]).await, [2]);

    let removed = t
        .queue
        .clean(Duration::ZERO, 0, JobState::Waiting)
        .await
        .expect("clean");
    assert_eq!(removed.len(), 2);
    assert_eq!(t.node(&["counts"])["waiting"].as_u64(), Some(0));
}

#[tokio::test]
async fn version_and_global_concurrency_cross_runtimes() {
    let t = Both::new("meta").await;
    t.queue.set_global_concurrency(3).await.expect("set");
    assert_eq!(t.node(&["getGlobalConcurrency"]), json!(3));
    assert_eq!(t.node(&["getVersion"]), json!("bullmq:6.7.6"));
    assert_eq!(
        t.queue.get_version().await.expect("version").as_deref(),
        Some("bullmq:6.7.6")
    );
}
