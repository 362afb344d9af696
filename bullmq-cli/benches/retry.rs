//! `bullmq retry --state failed` against the library's own bulk retry (`Queue::retry_jobs`),
//! on the same server and the same number of failed jobs (`BULLMQ_CLI_BENCH_JOBS`, 100,000 by
//! default; `BULLMQ_CLI_BENCH_URL` picks the store, the test Redis by default, and
//! `BULLMQ_CLI_BENCH_SCHEMA` a migrated PostgreSQL schema). Prints both times and their ratio.
//!
//! `cargo bench -p bullmq-cli --bench retry`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bullmq::job::{FinishedState, JobType};
use bullmq::options::JobOptions;
use bullmq::{
    AnyBackend, BulkJob, ConnectOptions, JobError, JobState, Prefix, Queue, QueueName, Worker,
    WorkerOptions,
};
use serde_json::json;

async fn failed(options: &ConnectOptions, name: &str, n: u64) -> Queue<AnyBackend> {
    let queue = Queue::try_new(
        QueueName::new(name).unwrap(),
        options.connect(name).await.unwrap(),
    )
    .expect("the backend is bound to this queue");
    let mut left = n;
    while left > 0 {
        let size = left.min(1000);
        let jobs = (0..size)
            .map(|i| BulkJob {
                name: "f".to_owned(),
                data: json!({"i": i}),
                opts: JobOptions::default(),
            })
            .collect();
        queue.add_bulk(jobs).await.unwrap();
        left -= size;
    }
    let worker = Worker::new(
        QueueName::new(name).unwrap(),
        options.connect(name).await.unwrap(),
        WorkerOptions::new().concurrency(200),
        |_, _| async { Err::<serde_json::Value, _>(JobError::failed("planned")) },
    )
    .await
    .unwrap();
    let failed = [JobType::State(JobState::Failed)];
    while queue.get_job_count_by_types(&failed).await.unwrap() < n {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    worker.close().await;
    queue
}

#[tokio::main]
async fn main() {
    let n: u64 = std::env::var("BULLMQ_CLI_BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let url = std::env::var("BULLMQ_CLI_BENCH_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let prefix = format!("bench-cli-{}", std::process::id());
    let schema = std::env::var("BULLMQ_CLI_BENCH_SCHEMA").unwrap_or_else(|_| "bullmq".to_owned());
    let options = ConnectOptions::new(url.clone())
        .prefix(Prefix::new(&prefix).unwrap())
        .schema(schema.clone())
        .migrate(true);

    let cli_queue = failed(&options, "cli", n).await;
    let start = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_bullmq"))
        .args(["--url", &url, "--prefix", &prefix, "--schema", &schema])
        .args(["retry", "cli", "--yes", "--batch", "1000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    let cli = start.elapsed();
    assert!(status.success());
    let waiting = [JobType::State(JobState::Waiting)];
    assert_eq!(
        cli_queue.get_job_count_by_types(&waiting).await.unwrap(),
        n,
        "all retried"
    );

    let queue = failed(&options, "lib", n).await;
    let start = Instant::now();
    queue
        .retry_jobs(FinishedState::Failed, 1000, None)
        .await
        .unwrap();
    let lib = start.elapsed();
    assert_eq!(
        queue.get_job_count_by_types(&waiting).await.unwrap(),
        n,
        "all retried"
    );

    for name in ["cli", "lib"] {
        let q = Queue::try_new(
            QueueName::new(name).unwrap(),
            options.connect(name).await.unwrap(),
        )
        .expect("the backend is bound to this queue");
        q.obliterate(true, 10_000).await.unwrap();
    }
    println!(
        "retry of {n} failed jobs: bullmq retry {:.2} s, Queue::retry_jobs {:.2} s, ratio {:.3}",
        cli.as_secs_f64(),
        lib.as_secs_f64(),
        cli.as_secs_f64() / lib.as_secs_f64()
    );
}
