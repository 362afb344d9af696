//! The dashboard end to end in headless Chromium (tests/browser), on Redis and on PostgreSQL:
//! served on a free port over a queue the fixture fills, driven by
//! `tests/browser/dashboard-e2e.mjs`, while a producer fills a second queue.
//!
//! Needs Debian's `chromium` (`/usr/bin/chromium`) and `npm ci --prefix tests/browser`. Without
//! them the test says so loudly and passes, except in CI (`CI=true`), where it fails.
//! Screenshots go to `<target>/tmp/dashboard-screenshots/`.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub, dead_code)]

#[path = "../handlers/support.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bullmq::backend::Lifecycle as _;
use bullmq::job::{JobState, JobType};
use bullmq::{AnyBackend, JobError, JobOptions, Queue, QueueName, Worker, WorkerOptions};
use bullmq_test_support::{eventually, unique_name};
use support::{Fixture, Store};

const CHROMIUM: &str = "/usr/bin/chromium";
/// Failed jobs whose data holds [`BULK`].
const BULK_COUNT: usize = 3;
const BULK: &str = "acme-corp";

/// The browser test's directory, or `None` (after a loud message) when chromium or the npm
/// packages are missing outside CI; in CI their absence fails the test.
fn browser_dir() -> Option<PathBuf> {
    let dir = bullmq_test_support::workspace_dir().join("tests/browser");
    let missing = if !Path::new(CHROMIUM).exists() {
        Some(format!(
            "{CHROMIUM} is missing (apt-get install -y chromium)"
        ))
    } else if !dir.join("node_modules/playwright-core").exists() {
        Some("tests/browser/node_modules is missing (npm ci --prefix tests/browser)".to_owned())
    } else {
        None
    };
    match missing {
        None => Some(dir),
        Some(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("the browser test cannot run in CI: {why}")
        }
        Some(why) => {
            eprintln!(
                "\n!!!!!!!!!! SKIPPED: the dashboard's browser test did not run: {why} !!!!!!!!!!\n"
            );
            None
        }
    }
}

/// A value in the data of the waiting job the browser searches for.
const NEEDLE: &str = "needle-in-data-7";

/// Adds [`BULK_COUNT`] jobs whose data holds [`BULK`], and one more tried twice (shown in the
/// job screenshots, left failed), and fails them with a worker; the fixture's waiting job is
/// taken out meanwhile and added again (with [`NEEDLE`] in its data) once the worker has
/// closed. Answers the id of the job tried twice.
async fn fail_bulk_jobs(fx: &Fixture) -> String {
    assert!(fx.queue.remove(&fx.waiting, false).await.unwrap());
    let failed_before = failed(&fx.queue).await;
    let twice = fx
        .queue
        .add(
            "declined-card",
            &serde_json::json!({"card": {"brand": "visa", "last4": "4242"}}),
            JobOptions {
                attempts: Some(2),
                ..JobOptions::default()
            },
        )
        .await
        .unwrap()
        .id;
    for i in 0..BULK_COUNT {
        fx.queue
            .add(
                "invoice",
                &serde_json::json!({"customer": {"name": BULK, "n": i}}),
                JobOptions::default(),
            )
            .await
            .unwrap();
    }
    let qn = QueueName::new(fx.name.clone()).unwrap();
    let worker = Worker::new(
        qn,
        fx.queue.backend().clone(),
        // Named: the job page shows the worker of the latest attempt.
        WorkerOptions {
            name: Some("invoice-worker".to_owned()),
            ..WorkerOptions::default()
        },
        |job: bullmq::ActiveJob<AnyBackend>, _| async move {
            // Only the invoices are waiting while it runs.
            Err::<serde_json::Value, _>(JobError::failed(format!("declined: {}", job.name)))
        },
    )
    .await
    .unwrap();
    let q = &fx.queue;
    eventually(
        "the invoices to fail",
        Duration::from_secs(60),
        || async move { failed(q).await == failed_before + BULK_COUNT as u64 + 1 },
    )
    .await;
    worker.close().await;
    fx.queue
        .add(
            "needle-job",
            &serde_json::json!({"deep": [{"find": NEEDLE}]}),
            JobOptions::default(),
        )
        .await
        .unwrap();
    twice.as_str().to_owned()
}

async fn failed(queue: &Queue<AnyBackend>) -> u64 {
    queue
        .get_job_count_by_types(&[JobType::State(JobState::Failed)])
        .await
        .unwrap()
}

/// A producer adding a job to `queue` every 300 ms until `stop` is set.
fn producer(queue: Queue<AnyBackend>, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut n = 0_u64;
        while !stop.load(Ordering::Relaxed) {
            queue
                .add("tick", &serde_json::json!({"n": n}), JobOptions::default())
                .await
                .unwrap();
            n += 1;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    })
}

async fn in_chromium(store: Store) {
    let Some(dir) = browser_dir() else { return };
    let fx = Fixture::new(store).await;
    // The fixture's own worker has finished: nothing else takes the waiting jobs.
    let shown = fail_bulk_jobs(&fx).await;
    let live_name = unique_name("dash-live");
    let live = Queue::try_new(
        QueueName::new(live_name.clone()).unwrap(),
        fx.queue
            .backend()
            .for_queue(&QueueName::new(live_name.clone()).unwrap(), None),
    )
    .expect("the backend is bound to this queue");
    live.add("first", &serde_json::json!({}), JobOptions::default())
        .await
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let producing = producer(live, Arc::clone(&stop));

    let app = fx.app();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    std::fs::create_dir_all(&out).unwrap();
    let label = match store {
        Store::Redis => "redis",
        Store::Postgres => "postgres",
    };
    let (queue, failed_id) = (fx.name.clone(), fx.failed.as_str().to_owned());
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg("dashboard-e2e.mjs")
            .current_dir(&dir)
            .env("BASE", format!("http://{addr}/admin"))
            .env("QUEUE", queue)
            .env("FAILED", failed_id)
            .env("SHOWN", shown)
            .env("NEEDLE", NEEDLE.to_uppercase())
            .env("NEEDLE_NAME", "needle-job")
            .env("BULK", BULK)
            .env("BULK_COUNT", BULK_COUNT.to_string())
            .env("LIVE_QUEUE", live_name)
            .env("STORE", label)
            .env("OUT", &out)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    producing.await.unwrap();
    server.abort();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(
        report["shots"].as_array().map(Vec::len),
        Some(12),
        "{report}"
    );
    eprintln!("{label}: {}", report["steps"]);
    // What the browser did is in the store.
    assert_eq!(
        fx.queue.get_job_state(&fx.failed).await.unwrap(),
        Some(JobState::Waiting)
    );
    // The job tried twice is the one left failed.
    assert_eq!(failed(&fx.queue).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overview_search_retry_bulk_and_live_counts_on_redis() {
    in_chromium(Store::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overview_search_retry_bulk_and_live_counts_on_postgres() {
    in_chromium(Store::Postgres).await;
}
