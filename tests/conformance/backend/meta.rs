//! `QueueMeta`: the queue's settings (`paused`, `concurrency`, `max`, …).

use std::collections::HashMap;

use bullmq_core::backend::QueueMeta;

use super::Sec;
use crate::store::Store;

pub async fn meta_fields_are_set_read_and_removed<S: Store>() {
    let s = Sec::<S>::new().await;
    let b = &s.b;
    assert!(b.get_queue_meta().await.unwrap().is_empty());
    assert_eq!(b.get_queue_meta_field("paused").await.unwrap(), None);
    assert_eq!(
        b.get_queue_meta_fields(&["a", "b"]).await.unwrap(),
        [None, None]
    );
    assert!(!b.has_queue_meta_field("paused").await.unwrap());

    // (How many fields a set answers differs: new fields on Redis, rows written on
    // PostgreSQL; each store pins its own.)
    b.set_queue_meta(&[("concurrency", "4".to_owned()), ("max", "10".to_owned())])
        .await
        .unwrap();
    b.set_queue_meta(&[("max", "12".to_owned()), ("duration", "1000".to_owned())])
        .await
        .unwrap();
    assert_eq!(b.set_queue_meta(&[]).await.unwrap(), 0);

    assert_eq!(
        b.get_queue_meta_field("max").await.unwrap().as_deref(),
        Some("12")
    );
    assert_eq!(
        b.get_queue_meta_fields(&["duration", "paused", "concurrency", "duration"])
            .await
            .unwrap(),
        [
            Some("1000".to_owned()),
            None,
            Some("4".to_owned()),
            Some("1000".to_owned())
        ]
    );
    assert!(b.get_queue_meta_fields(&[]).await.unwrap().is_empty());
    let all: HashMap<String, String> = b.get_queue_meta().await.unwrap().into_iter().collect();
    let expected = crate::support::maps::string_map(&[
        ("concurrency", "4"),
        ("max", "12"),
        ("duration", "1000"),
    ]);
    assert_eq!(all, expected);
    assert!(b.has_queue_meta_field("concurrency").await.unwrap());

    assert_eq!(
        b.remove_queue_meta_fields(&["max", "paused"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(b.remove_queue_meta_fields(&[]).await.unwrap(), 0);
    assert!(!b.has_queue_meta_field("max").await.unwrap());
    assert_eq!(b.get_queue_meta().await.unwrap().len(), 2);
}

pub async fn each_queue_has_its_own_meta<S: Store>() {
    let s = Sec::<S>::new().await;
    let second = s.sibling("second").await;
    let second = second.backend();
    s.b.set_queue_meta(&[("paused", "1".to_owned())])
        .await
        .unwrap();
    assert!(s.b.has_queue_meta_field("paused").await.unwrap());
    assert!(!second.has_queue_meta_field("paused").await.unwrap());
    assert!(second.get_queue_meta().await.unwrap().is_empty());
    assert_eq!(
        second.remove_queue_meta_fields(&["paused"]).await.unwrap(),
        0
    );
    assert!(s.b.has_queue_meta_field("paused").await.unwrap());
}
