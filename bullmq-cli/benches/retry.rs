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
use bullmq::{AnyBackend, ConnectOptions, JobState, Prefix, Queue, QueueName};
use bullmq_test_support::fill_failed;

async fn failed(options: &ConnectOptions, name: &str, n: u64) -> Queue<AnyBackend> {
    let queue = Queue::try_new(
        QueueName::new(name).unwrap(),
        options.connect(name).await.unwrap(),
    )
    .expect("the backend is bound to this queue");
    let worker_backend = options.connect(name).await.unwrap();
    fill_failed(&queue, worker_backend, n, 200, Duration::from_secs(3600)).await;
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
