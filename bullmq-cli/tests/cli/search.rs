//! `jobs --search`: containment and text in the data, paged with a cursor; on Redis a bounded
//! scan that says how far it got; and a 1 MiB job's data cut with its size, whole with --full.

use std::collections::BTreeSet;

use bullmq::JobOptions;
use serde_json::{Value, json};

use crate::support::{Kind, Store};

/// The `n` of each job found.
fn ns(doc: &Value) -> Vec<u64> {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["data"]["n"].as_u64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_finds_jobs_by_their_data_page_by_page() {
    for store in Store::both().await {
        let queue = store.queue("orders").await;
        for n in 0..30_u64 {
            let data = json!({"user": {"name": format!("u{}", n % 3)}, "n": n});
            queue
                .add("order", &data, JobOptions::default())
                .await
                .unwrap();
        }
        let search = |rest: &[&str]| {
            let mut args = vec!["jobs", "orders", "-o", "json"];
            args.extend_from_slice(rest);
            store.run(&args).expect(0).json()
        };
        let expected: BTreeSet<u64> = (0..30).filter(|n| n % 3 == 1).collect();

        // Every match at once, newest first.
        let all = search(&["--search", r#"{"user":{"name":"u1"}}"#, "--per-page", "100"]);
        assert_eq!(
            ns(&all),
            expected.iter().rev().copied().collect::<Vec<_>>(),
            "{:?}",
            store.kind
        );
        assert_eq!(all["total"], 30);
        assert_eq!(all["scanned"], 30);
        assert_eq!(all["next_cursor"], Value::Null);
        assert_eq!(all["jobs"][0]["state"], "waiting");

        // Four a page, resumed with the cursor: each match once.
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..10 {
            let mut rest = vec!["--search", r#"{"user":{"name":"u1"}}"#, "--per-page", "4"];
            if let Some(c) = &cursor {
                rest.extend(["--cursor", c.as_str()]);
            }
            let page = search(&rest);
            seen.extend(ns(&page));
            cursor = page["next_cursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        assert_eq!(seen.iter().copied().collect::<BTreeSet<_>>(), expected);
        assert_eq!(seen.len(), expected.len(), "{seen:?} ({:?})", store.kind);

        // Text, oldest first.
        let text = search(&["--search", "u2", "--per-page", "100", "--sort", "asc"]);
        assert_eq!(
            ns(&text),
            (0..30).filter(|n| n % 3 == 2).collect::<Vec<_>>()
        );
        let none = search(&[
            "--search",
            r#"{"user":{"name":"nobody"}}"#,
            "--state",
            "failed",
        ]);
        assert_eq!(none["jobs"], json!([]));

        if store.kind == Kind::Redis {
            // A bounded scan: it says how far it got, and resumes there.
            let first = search(&["--search", "u2", "--per-page", "100", "--scan-limit", "7"]);
            assert_eq!(first["scanned"], 7);
            assert_eq!(first["total"], 30);
            let cursor = first["next_cursor"].as_str().unwrap().to_owned();
            assert_eq!(cursor, "waiting:7");
            let rest = search(&["--search", "u2", "--per-page", "100", "--cursor", &cursor]);
            assert_eq!(rest["scanned"], 23);
            let mut both = ns(&first);
            both.extend(ns(&rest));
            assert_eq!(both.len(), 10);
            store
                .run(&["jobs", "orders", "--search", "x", "--cursor", "nowhere"])
                .expect(2);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_mib_value_is_cut_with_its_size_and_whole_with_full() {
    for store in Store::both().await {
        let queue = store.queue("big").await;
        let blob = "x".repeat(1 << 20);
        let job = queue
            .add("big", &json!({ "blob": blob }), JobOptions::default())
            .await
            .unwrap();
        let id = job.id.as_str();
        let cut = store.json(&["job", "big", id]);
        assert_eq!(cut["data"]["truncated"], true);
        let size = cut["data"]["size"].as_u64().unwrap();
        assert!(size > 1 << 20, "{size}");
        assert_eq!(cut["data"]["preview"].as_str().unwrap().len(), 1024);
        let text = store.run(&["job", "big", id]).expect(0);
        assert!(
            text.stdout
                .contains(&format!("({size} bytes; --full shows all)")),
            "{:?}",
            store.kind
        );
        let whole = store.json(&["--full", "job", "big", id]);
        assert_eq!(whole["data"]["blob"].as_str().map(str::len), Some(1 << 20));
    }
}
