//! What every store's flow tests share, and the Redis flow tests' context ([`redis`]).

#[cfg(feature = "redis")]
pub mod redis;

use bullmq_core::backend::{Backend, DependenciesQuery};
use bullmq_core::{JobOptions, Prefix, Queue, QueueName};
use bullmq_flow::{FlowJob, FlowProducer, GetFlowOptions, JobNode};
use serde_json::{Value, json};

/// The tree across three queues that the flow tests of every store add and read back: `root`
/// (queue `reports`, data `{"r": 1}`, a generated id) with children `mid` (queue `renders`,
/// over `leaf` in queue `leaves`, under `leaf_prefix` when given) and `sib` (queue
/// `renders`, id `sib-1`, 3 attempts).
pub fn reports_tree(leaf_prefix: Option<Prefix>) -> FlowJob {
    let q = |name: &str| QueueName::new(name).expect("a queue name");
    let mut leaf = FlowJob::new(q("leaves"), "leaf", json!({"l": 1}));
    if let Some(prefix) = leaf_prefix {
        leaf = leaf.prefix(prefix);
    }
    FlowJob::new(q("reports"), "root", json!({"r": 1}))
        .child(FlowJob::new(q("renders"), "mid", json!({"m": 1})).child(leaf))
        .child(
            FlowJob::new(q("renders"), "sib", json!({}))
                .opts(JobOptions::new().job_id("sib-1").attempts(3)),
        )
}

/// Checks an added [`reports_tree`] as its root reads it back: the root's pending children in
/// `reports` (its queue) are `pending_keys`, and `get_flow` reads the whole tree, the same
/// once `normalize`d (children come in set-scan order).
pub async fn assert_reports_tree_read_back<B: Backend>(
    producer: &FlowProducer<B>,
    reports: &Queue<B>,
    added: &JobNode,
    mut pending_keys: Vec<String>,
    normalize: impl Fn(&JobNode) -> Value,
) {
    let deps = reports
        .job(added.job.id.clone())
        .get_dependencies(&DependenciesQuery::default())
        .await
        .expect("get_dependencies");
    let mut pending = deps.unprocessed.expect("the pending children").0;
    pending.sort();
    pending_keys.sort();
    assert_eq!(pending, pending_keys, "the root's pending children");

    let read = producer
        .get_flow(&GetFlowOptions::new(
            added.queue.clone(),
            added.job.id.clone(),
        ))
        .await
        .expect("get_flow")
        .expect("the tree");
    assert_eq!(normalize(&read), normalize(added));
    assert_eq!(read.iter().count(), 4);
}

/// A wide tree read back depth by depth: `producer` adds `top` (queue `top`) with `kids`
/// children `kid-<i>` (queue `kids`, data `{"i": i}`), each with one child `g` of its own
/// (queue `grandkids`); then `get_flow`, at most `max_children` children a node, reads the
/// root alone at depth 1, the root and its children at depth 2, and every node at depth 3.
/// The tree added, and the whole tree as read.
pub async fn wide_tree_by_depth<B: Backend>(
    producer: &FlowProducer<B>,
    kids: usize,
    max_children: u64,
) -> (JobNode, JobNode) {
    let q = |name: &str| QueueName::new(name).expect("a queue name");
    let children = (0..kids).map(|i| {
        FlowJob::new(q("kids"), format!("kid-{i}"), json!({"i": i})).child(FlowJob::new(
            q("grandkids"),
            "g",
            json!({"i": i}),
        ))
    });
    let added = producer
        .add(FlowJob::new(q("top"), "top", json!({})).children(children))
        .await
        .expect("add the tree");
    let get = |opts: GetFlowOptions| async move {
        producer
            .get_flow(&opts)
            .await
            .expect("get_flow")
            .expect("the tree")
    };
    let id = added.job.id.clone();
    let only_root = get(GetFlowOptions::new(q("top"), id.clone()).depth(1)).await;
    assert!(only_root.children.is_empty());
    let two = get(GetFlowOptions::new(q("top"), id.clone())
        .depth(2)
        .max_children(max_children))
    .await;
    assert_eq!(two.children.len(), kids);
    assert!(two.children.iter().all(|c| c.children.is_empty()));
    let full = get(GetFlowOptions::new(q("top"), id)
        .depth(3)
        .max_children(max_children))
    .await;
    assert_eq!(full.iter().count(), 1 + 2 * kids);
    (added, full)
}
