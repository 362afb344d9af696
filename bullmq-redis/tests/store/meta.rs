//! Only what is Redis-specific; the shared cases are the conformance suite's `meta.rs`.
//!
//! `QueueMeta` on the real Redis: the `meta` hash as the commands leave it.

use crate::support::readers as support;

use std::collections::HashMap;

use bullmq_core::backend::QueueMeta;
use support::Ctx;

#[tokio::test]
async fn meta_fields_round_trip_through_the_hash() {
    let ctx = Ctx::new().await;
    let b = &ctx.backend;
    let added = b
        .set_queue_meta(&[("concurrency", "4".to_owned()), ("max", "10".to_owned())])
        .await
        .unwrap();
    assert_eq!(added, 2);
    // Overwriting an existing field adds none.
    let added = b
        .set_queue_meta(&[("max", "12".to_owned()), ("duration", "1000".to_owned())])
        .await
        .unwrap();
    assert_eq!(added, 1);
    assert_eq!(b.set_queue_meta(&[]).await.unwrap(), 0);

    let stored: HashMap<String, String> = ctx.cmd(redis::cmd("HGETALL").arg(ctx.key("meta")));
    let expected = bullmq_test_support::maps::string_map(&[
        ("concurrency", "4"),
        ("max", "12"),
        ("duration", "1000"),
    ]);
    assert_eq!(stored, expected);

    assert_eq!(
        b.get_queue_meta_field("max").await.unwrap().as_deref(),
        Some("12")
    );
    assert_eq!(b.get_queue_meta_field("paused").await.unwrap(), None);
    assert_eq!(
        b.get_queue_meta_fields(&["duration", "paused", "concurrency"])
            .await
            .unwrap(),
        [Some("1000".to_owned()), None, Some("4".to_owned())]
    );
    assert!(b.get_queue_meta_fields(&[]).await.unwrap().is_empty());
    let all: HashMap<String, String> = b.get_queue_meta().await.unwrap().into_iter().collect();
    assert_eq!(all, expected);

    assert!(b.has_queue_meta_field("concurrency").await.unwrap());
    assert!(!b.has_queue_meta_field("paused").await.unwrap());

    assert_eq!(
        b.remove_queue_meta_fields(&["max", "paused"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(b.remove_queue_meta_fields(&[]).await.unwrap(), 0);
    let left: Vec<String> = ctx.cmd(redis::cmd("HKEYS").arg(ctx.key("meta")));
    assert_eq!(left.len(), 2);
    assert!(!left.contains(&"max".to_owned()));
}
