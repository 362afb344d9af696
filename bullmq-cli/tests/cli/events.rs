//! `events QUEUE --follow`: one line per event as it happens.

use std::io::{BufRead as _, BufReader};

use bullmq::options::JobOptions;
use serde_json::json;

use crate::support::{Out, Store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_follow_prints_each_event_until_the_limit() {
    for store in Store::both().await {
        let queue = store.queue("ev").await;
        let mut child = store.spawn(&["events", "ev", "--follow", "--limit", "2", "-o", "jsonl"]);
        // The reader says when it listens; every event after that is seen.
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        assert!(line.starts_with("following the events"), "{line:?}");
        let job = queue
            .add("hello", &json!({"x": 1}), JobOptions::default())
            .await
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let out = Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: line,
        }
        .expect(0);
        let events = out.lines();
        assert_eq!(events.len(), 2, "{events:?}");
        let added = events
            .iter()
            .find(|e| e["event"] == "added")
            .expect("an added event");
        assert_eq!(added["job_id"].as_str(), Some(job.id.as_str()));
        assert_eq!(added["fields"]["name"], "hello");
        assert!(added["id"].as_str().is_some_and(|id| !id.is_empty()));
    }
}
