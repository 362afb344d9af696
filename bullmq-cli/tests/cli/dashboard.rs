//! `dashboard --listen`: the web dashboard served by the binary, read over HTTP.

use std::io::{BufRead as _, BufReader};

use bullmq::options::JobOptions;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::Store;

/// The answer to `GET path` on `addr`, head and body, over a plain HTTP/1.1 connection.
async fn http_get(addr: &str, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_serves_the_stores_queues() {
    for store in Store::both().await {
        let queue = store.queue("dash").await;
        queue
            .add("shown-in-the-page", &json!({"x": 1}), JobOptions::default())
            .await
            .unwrap();
        let mut child = store.spawn(&["dashboard", "--listen", "127.0.0.1:0"]);
        // The first line names the address it listens on (a free port was asked for).
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        let overview = http_get(&addr, "/").await;
        let page = http_get(&addr, "/c/main/q/dash?state=waiting").await;
        child.kill().unwrap();
        let _ = child.wait();
        assert!(overview.starts_with("HTTP/1.1 200"), "{overview}");
        assert!(overview.contains("/c/main/q/dash"), "{overview}");
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("shown-in-the-page"), "{page}");
        // Full access: the page has its action forms.
        assert!(page.contains("/c/main/q/dash/pause"), "{page}");
    }
}
