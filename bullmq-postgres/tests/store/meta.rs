//! Only what is PostgreSQL-specific; the shared cases are the conformance suite's `meta.rs`.
//!
//! `QueueMeta` on PostgreSQL: the `meta` rows upstream's commands write and read, per queue,
//! and the meta a Node.js `Queue` writes read back from Rust.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{TestSchema, run_node};
use bullmq_core::backend::QueueMeta;
use serde_json::json;

#[tokio::test]
async fn fields_are_set_read_and_removed() {
    let (_schema, backend) = TestSchema::with_backend("meta_rw", "q").await;
    assert!(backend.get_queue_meta().await.unwrap().is_empty());
    assert_eq!(backend.get_queue_meta_field("paused").await.unwrap(), None);
    assert!(!backend.has_queue_meta_field("paused").await.unwrap());

    let set = [("concurrency", "4".to_owned()), ("paused", "1".to_owned())];
    assert_eq!(backend.set_queue_meta(&set).await.unwrap(), 2);
    // Node.js answers the rows written, existing fields included.
    let again = [
        ("concurrency", "5".to_owned()),
        ("max", "10".to_owned()),
        ("max", "11".to_owned()),
    ];
    assert_eq!(backend.set_queue_meta(&again).await.unwrap(), 2);
    assert_eq!(backend.set_queue_meta(&[]).await.unwrap(), 0);

    assert_eq!(
        backend.get_queue_meta_field("concurrency").await.unwrap(),
        Some("5".to_owned())
    );
    assert_eq!(
        backend.get_queue_meta_field("max").await.unwrap(),
        Some("11".to_owned()),
        "the last value given wins"
    );
    assert!(backend.has_queue_meta_field("paused").await.unwrap());
    assert_eq!(
        backend
            .get_queue_meta_fields(&["max", "nope", "paused", "max"])
            .await
            .unwrap(),
        vec![
            Some("11".to_owned()),
            None,
            Some("1".to_owned()),
            Some("11".to_owned())
        ]
    );
    assert!(backend.get_queue_meta_fields(&[]).await.unwrap().is_empty());
    let mut all = backend.get_queue_meta().await.unwrap();
    all.sort();
    assert_eq!(
        all,
        vec![
            ("concurrency".to_owned(), "5".to_owned()),
            ("max".to_owned(), "11".to_owned()),
            ("paused".to_owned(), "1".to_owned()),
        ]
    );

    assert_eq!(
        backend
            .remove_queue_meta_fields(&["paused", "nope"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(backend.remove_queue_meta_fields(&[]).await.unwrap(), 0);
    assert!(!backend.has_queue_meta_field("paused").await.unwrap());
    assert_eq!(backend.get_queue_meta().await.unwrap().len(), 2);
}

#[tokio::test]
async fn the_meta_a_node_queue_writes_reads_back() {
    let schema = TestSchema::new("meta_node");
    let name = schema.as_str().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        let env = [
            ("SCHEMA", name.as_str()),
            ("QUEUE", "interop"),
            ("OP", "add"),
            ("MIGRATE", "1"),
        ];
        run_node("pg-queue-op.mjs", &env)
    })
    .await
    .expect("the node helper task");
    let reply: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(reply["ok"], json!(true));
    let backend = schema.backend("interop").await;
    assert_eq!(
        backend.get_queue_meta_field("version").await.unwrap(),
        Some(bullmq_core::LIB_VERSION.to_owned())
    );
    assert_eq!(
        backend
            .get_queue_meta_fields(&["opts.maxLenEvents", "version"])
            .await
            .unwrap(),
        vec![
            Some("10000".to_owned()),
            Some(bullmq_core::LIB_VERSION.to_owned())
        ]
    );
}
