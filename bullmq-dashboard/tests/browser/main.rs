//! The dashboard end to end in headless Chromium (tests/browser): served on a free port over
//! a queue the fixture fills, driven by `tests/browser/dashboard-e2e.mjs`. Needs Debian's
//! `chromium` and `npm ci --prefix tests/browser`, hence ignored by default:
//! `cargo test -p bullmq-dashboard --test browser -- --ignored`.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub, dead_code)]

#[path = "../handlers/support.rs"]
mod support;

use std::process::Command;

use support::{Fixture, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium and `npm ci --prefix tests/browser`"]
async fn overview_search_and_retry_in_chromium() {
    let fx = Fixture::new(Store::Redis).await;
    let app = fx.app();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    std::fs::create_dir_all(&out).unwrap();
    let dir = bullmq_test_support::workspace_dir().join("tests/browser");
    assert!(
        dir.join("node_modules/playwright-core").exists(),
        "run `npm ci --prefix tests/browser` first"
    );
    let (queue, failed) = (fx.name.clone(), fx.failed.as_str().to_owned());
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg("dashboard-e2e.mjs")
            .current_dir(&dir)
            .env("BASE", format!("http://{addr}/admin"))
            .env("QUEUE", queue)
            .env("FAILED", failed)
            .env("NEEDLE", "needle-job")
            .env("OUT", &out)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
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
    assert_eq!(
        fx.queue.get_job_state(&fx.failed).await.unwrap(),
        Some(bullmq::job::JobState::Waiting)
    );
}
