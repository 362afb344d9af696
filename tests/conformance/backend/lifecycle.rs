//! `Lifecycle`: keys, queues and closing.

use bullmq_core::QueueName;
use bullmq_core::backend::{Lifecycle, NodeKey};

use super::Sec;
use crate::store::Store;

pub async fn keys_name_the_queue_and_parse_back<S: Store>() {
    let s = Sec::<S>::new().await;
    let qualified = s.b.qualified_name().to_owned();
    assert!(qualified.ends_with("q"), "{qualified}");
    let key = s.b.to_key("job-1");
    assert_eq!(key, format!("{qualified}:job-1"));
    let node = s.b.parse_node_key(&key).expect("a job key");
    assert_eq!((node.queue.as_str(), node.id.as_str()), ("q", "job-1"));
    assert_eq!(
        s.b.parse_node_key(&node_key(&node)),
        Some(node.clone()),
        "prefix, queue and id make the key again"
    );

    let other = s.b.for_queue(&QueueName::new("other").unwrap(), None);
    assert_eq!(
        other.parse_node_key(&other.to_key("x")).unwrap().queue,
        "other"
    );
    assert_ne!(other.qualified_name(), qualified);
}

fn node_key(node: &NodeKey) -> String {
    if node.prefix.is_empty() {
        format!("{}:{}", node.queue, node.id)
    } else {
        format!("{}:{}:{}", node.prefix, node.queue, node.id)
    }
}

pub async fn close_marks_every_clone_closing<S: Store>() {
    let s = Sec::<S>::new().await;
    let b = s.sibling("q").await.backend().clone();
    let clone = b.clone();
    assert!(!b.is_closing());
    b.wait_until_ready().await.unwrap();
    b.close(false).await.unwrap();
    assert!(b.is_closing());
    assert!(clone.is_closing(), "clones share the connections");
    // The case's own backend, another connection set, is untouched.
    assert!(!s.b.is_closing());
}

pub async fn a_handle_closes_alone<S: Store>() {
    let s = Sec::<S>::new().await;
    let b = s.sibling("q").await.backend().clone();
    let handle = b.handle();
    b.wait_until_ready().await.unwrap();
    handle.close(false).await.unwrap();
    assert!(handle.is_closing());
    assert!(!b.is_closing(), "a handle has a closing flag of its own");
    // The pooled connections are shared: the first backend still works, and a handle of a
    // closed handle is open again.
    b.wait_until_ready().await.unwrap();
    let again = handle.handle();
    assert!(!again.is_closing());
    again.wait_until_ready().await.unwrap();
}
