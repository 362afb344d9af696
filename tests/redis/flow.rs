//! `FlowProducer` on Redis only: trees across key prefixes, and `get_flow`'s `max_children`
//! read as `SSCAN … COUNT`. Flow behaviour every store shares is in the conformance suite
//! (`tests/conformance/flow.rs`).

#![allow(clippy::unwrap_used)]

use crate::support;

use crate::support::flows::redis::{Ctx, norm, q};
use crate::support::flows::{assert_reports_tree_read_back, reports_tree};
use bullmq::JobState;
use bullmq::flow::GetFlowOptions;
use serde_json::Value;

/// Children sorted by id, at every level, for comparing trees whose child order comes from a
/// set scan.
fn sorted(mut tree: Value) -> Value {
    if let Some(children) = tree["children"].as_array_mut() {
        let mut owned: Vec<Value> = children.drain(..).map(sorted).collect();
        owned.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        *children = owned;
    }
    tree
}

#[tokio::test]
async fn a_tree_spans_queues_and_prefixes_and_reads_back_whole() {
    let ctx = Ctx::new();
    let producer = ctx.producer().await;
    let other = ctx.other_prefix();
    let added = producer
        .add(reports_tree(Some(other.clone())))
        .await
        .unwrap();
    // The ids and the states of the jobs in the test's own prefix are the conformance suite's
    // `a_tree_spans_queues_and_reads_back_whole`; here, the leaf under the other prefix.
    let mid = &added.children[0];
    let leaf = &mid.children[0];
    assert_eq!(leaf.prefix, other);
    assert_eq!(
        ctx.state("renders", &mid.job.id).await,
        Some(JobState::WaitingChildren),
        "a parent waits on a child under another prefix"
    );
    let leaves = ctx.queue_in(&other, "leaves").await;
    let stored_leaf = leaves.get_job(&leaf.job.id).await.unwrap().unwrap();
    let mid_key = format!("{}:renders:{}", ctx.prefix, mid.job.id);
    assert_eq!(stored_leaf.parent_key.as_deref(), Some(mid_key.as_str()));
    let parent = stored_leaf.parent.unwrap();
    assert_eq!(parent.queue_key, format!("{}:renders", ctx.prefix));
    assert_eq!(parent.id.as_deref(), Some(mid.job.id.as_str()));
    assert_eq!(
        leaves.job(leaf.job.id.clone()).get_state().await.unwrap(),
        Some(JobState::Waiting)
    );

    let reports = ctx.queue("reports").await;
    let sib_key = format!("{}:renders:sib-1", ctx.prefix);
    assert_reports_tree_read_back(&producer, &reports, &added, vec![mid_key, sib_key], |n| {
        sorted(norm(n))
    })
    .await;
}

#[tokio::test]
async fn get_flow_honours_depth_and_max_children() {
    let ctx = Ctx::new();
    let producer = ctx.producer().await;
    let (added, _) = support::flows::wide_tree_by_depth(&producer, 200, 500).await;

    // A set of 200 is a hash table, so `SSCAN … COUNT 5` reads a few, as Node's getFlow does.
    let few = producer
        .get_flow(&GetFlowOptions::new(q("top"), added.job.id.clone()).max_children(5))
        .await
        .unwrap()
        .unwrap();
    assert!(
        !few.children.is_empty() && few.children.len() < 50,
        "{} children read with max_children 5",
        few.children.len()
    );

    let missing = producer
        .get_flow(&GetFlowOptions::new(q("top"), "nope"))
        .await
        .unwrap();
    assert!(missing.is_none());
}
