//! Jobs added by Rust, processed by a Node.js BullMQ 6.7.6 `Worker`: Rust's getters read what
//! Node stored (return values, failure reasons, stack traces, attempts, progress, logs) exactly.

use crate::support;

use std::time::Duration;

use bullmq::backend::{FinishStatus, Queries, Range};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{JobState, Prefix, Queue, QueueName};
use serde_json::json;

use crate::process_jobs::{Outcomes, add_outcomes};

#[tokio::test]
async fn rust_reads_what_a_node_worker_stored() {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let options =
        RedisOptions::new(support::redis_url()).prefix(Prefix::new(&prefix).expect("prefix"));
    let name = QueueName::new("mixed").expect("name");
    let backend = RedisBackend::connect(&options, name.clone())
        .await
        .expect("connect");
    let queue = Queue::try_new(name, backend).expect("the backend is bound to this queue");

    let Outcomes {
        ok,
        progress,
        fail,
        fatal,
    } = add_outcomes(&queue, Duration::ZERO).await;

    support::run_node(
        "process-jobs.mjs",
        &[("PREFIX", &prefix), ("QUEUE", "mixed"), ("EXPECT", "4")],
    );

    let ok = queue.get_job(&ok.id).await.expect("get").expect("exists");
    assert_eq!(ok.return_value.as_deref(), Some(r#"{"double":42}"#));
    assert_eq!(
        ok.return_value_as::<serde_json::Value>()
            .expect("set")
            .expect("JSON"),
        json!({"double": 42})
    );
    assert_eq!((ok.attempts_made, ok.attempts_started), (1, 1));
    assert!(ok.processed_on.is_some() && ok.finished_on.is_some());
    assert_eq!(
        queue.get_job_state(&ok.id).await.expect("state"),
        Some(JobState::Completed)
    );

    let progress_job = queue
        .get_job(&progress.id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(progress_job.progress, json!({"pct": 50}));
    assert_eq!(progress_job.return_value.as_deref(), Some(r#""done""#));
    let logs = queue
        .get_job_logs(&progress.id, Range::ALL_OLDEST_FIRST)
        .await
        .expect("logs");
    assert_eq!(
        (logs.logs, logs.count),
        (vec!["first line".to_owned(), "second line".to_owned()], 2)
    );

    let fail = queue.get_job(&fail.id).await.expect("get").expect("exists");
    assert_eq!(fail.failed_reason.as_deref(), Some("boom 7"));
    assert_eq!(fail.attempts_made, 2);
    assert_eq!(fail.stacktrace.len(), 2);
    assert!(
        fail.stacktrace
            .iter()
            .all(|t| t.starts_with("Error: boom 7")),
        "{:?}",
        fail.stacktrace
    );
    let status = queue
        .backend()
        .is_finished(&fail.id)
        .await
        .expect("is_finished");
    assert_eq!(status, FinishStatus::Failed(Some("boom 7".into())));

    let fatal = queue
        .get_job(&fatal.id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(fatal.failed_reason.as_deref(), Some("no retry"));
    assert_eq!(
        fatal.attempts_made, 1,
        "an unrecoverable error is not retried"
    );

    let counts = queue
        .get_job_counts(&[
            JobState::Completed.into(),
            JobState::Failed.into(),
            JobState::Waiting.into(),
        ])
        .await
        .expect("counts");
    let counts: Vec<u64> = counts.into_iter().map(|(_, n)| n).collect();
    assert_eq!(counts, [2, 2, 0]);
    let completed = queue.get_completed(Range::ALL).await.expect("completed");
    assert_eq!(completed.len(), 2);
}
