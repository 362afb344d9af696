//! Flows across runtimes, against Node.js BullMQ 6.7.6 (`tests/node/flow-op.mjs`): a tree
//! added by Node's `FlowProducer` run by Rust workers and the other way round, a tree whose
//! children Node runs and whose parent Rust runs, `getFlow` and `get_flow` giving the same
//! tree, twin trees added by each runtime stored alike, and every failure policy in both
//! directions.

#![allow(clippy::unwrap_used)]

use crate::support;

use crate::support::flows::redis::{Ctx, norm, q};
use bullmq::flow::{FlowJob, GetFlowOptions, JobNode};
use bullmq::{JobId, JobOptions, JobState};
use serde_json::{Value, json};

fn node(ctx: &Ctx, args: &[&str]) -> Value {
    let out = support::run_node_args(
        &[&["flow-op.mjs"], args].concat(),
        &[("PREFIX", &ctx.prefix)],
    );
    serde_json::from_str(out.trim()).unwrap()
}

fn node_get_flow(ctx: &Ctx, queue: &str, id: &str) -> Value {
    node(ctx, &["getFlow", queue, id])
}

async fn rust_get_flow(ctx: &Ctx, queue: &str, id: &str) -> JobNode {
    ctx.producer()
        .await
        .get_flow(&GetFlowOptions::new(q(queue), id))
        .await
        .unwrap()
        .unwrap()
}

fn id_of(tree: &Value) -> JobId {
    JobId::from(tree["id"].as_str().unwrap())
}

/// The tree the tests add from both sides: a root in `reports`, a child in `renders` with a
/// grandchild in `leaves`, and a second child in `renders` (with `extra` options).
fn tree_json(extra: &Value) -> Value {
    json!({
        "queueName": "reports", "name": "root", "data": {"r": 1, "text": "ünï"},
        "children": [
            {"queueName": "renders", "name": "mid", "data": {"m": [1, 2]},
             "children": [{"queueName": "leaves", "name": "leaf", "data": {}}]},
            {"queueName": "renders", "name": "sib", "data": {"s": null}, "opts": extra},
        ]
    })
}

fn tree_rust(extra: JobOptions) -> FlowJob {
    FlowJob::new(q("reports"), "root", json!({"r": 1, "text": "ünï"}))
        .child(
            FlowJob::new(q("renders"), "mid", json!({"m": [1, 2]})).child(FlowJob::new(
                q("leaves"),
                "leaf",
                json!({}),
            )),
        )
        .child(FlowJob::new(q("renders"), "sib", json!({"s": null})).opts(extra))
}

#[tokio::test]
async fn a_node_flow_runs_on_rust_workers_and_reads_back_alike() {
    let ctx = Ctx::new();
    let added = node(
        &ctx,
        &["add", &tree_json(&json!({"attempts": 2})).to_string()],
    );
    let root = id_of(&added);
    assert_eq!(
        ctx.state("reports", &root).await,
        Some(JobState::WaitingChildren)
    );
    // Before and after processing, both runtimes read the same tree.
    let rust = norm(&rust_get_flow(&ctx, "reports", root.as_str()).await);
    assert_eq!(rust, node_get_flow(&ctx, "reports", root.as_str()));

    let _w1 = ctx.worker("reports").await;
    let _w2 = ctx.worker("renders").await;
    let _w3 = ctx.worker("leaves").await;
    ctx.wait_state("reports", &root, JobState::Completed).await;
    let rust = norm(&rust_get_flow(&ctx, "reports", root.as_str()).await);
    assert_eq!(rust, node_get_flow(&ctx, "reports", root.as_str()));
    assert_eq!(
        rust["returnvalue"]["children"].as_object().unwrap().len(),
        2
    );
    let mid_key = format!(
        "{}:renders:{}",
        ctx.prefix,
        added["children"][0]["id"].as_str().unwrap()
    );
    assert_eq!(rust["returnvalue"]["children"][&mid_key]["name"], "mid");
}

#[tokio::test]
async fn a_rust_flow_runs_on_node_workers() {
    let ctx = Ctx::new();
    let added = ctx
        .producer()
        .await
        .add(tree_rust(JobOptions::new()))
        .await
        .unwrap();
    let root = added.job.id.as_str();
    assert_eq!(
        norm(&rust_get_flow(&ctx, "reports", root).await),
        node_get_flow(&ctx, "reports", root)
    );
    assert_eq!(
        node(&ctx, &["work", "reports,renders,leaves", "4"]),
        json!(4)
    );
    let done = ctx.job("reports", &added.job.id).await;
    let value: Value = done.return_value_as().unwrap().unwrap();
    let mid_key = format!("{}:renders:{}", ctx.prefix, added.children[0].job.id);
    let leaf_key = format!(
        "{}:leaves:{}",
        ctx.prefix, added.children[0].children[0].job.id
    );
    assert_eq!(value["name"], "root");
    assert_eq!(
        value["children"][&mid_key]["children"][&leaf_key]["name"],
        "leaf"
    );
    assert_eq!(
        norm(&rust_get_flow(&ctx, "reports", root).await),
        node_get_flow(&ctx, "reports", root)
    );
}

#[tokio::test]
async fn node_runs_the_children_and_rust_the_parent() {
    let ctx = Ctx::new();
    let added =
        ctx.producer()
            .await
            .add(FlowJob::new(q("parents"), "parent", json!({})).children(
                (0..3).map(|i| FlowJob::new(q("kids"), format!("kid-{i}"), json!({"i": i}))),
            ))
            .await
            .unwrap();
    let _parents = ctx.worker("parents").await;
    assert_eq!(node(&ctx, &["work", "kids", "3"]), json!(3));
    let value = ctx.completed_value("parents", &added.job.id).await;
    let children = value["children"].as_object().unwrap();
    assert_eq!(children.len(), 3);
    for kid in &added.children {
        let key = format!("{}:kids:{}", ctx.prefix, kid.job.id);
        assert_eq!(children[&key]["name"], kid.job.name.as_str());
    }
}

#[tokio::test]
async fn twin_trees_are_stored_alike() {
    // The same tree, with the same ids and timestamps, added by Node under one prefix and by
    // Rust under another: Node's getFlow reads the two back identical but for the prefix.
    let ctx = Ctx::new();
    let twin = Ctx::new();
    let ids = |t: &mut Value, path: &[usize], id: &str| {
        let mut node = t;
        for i in path {
            node = &mut node["children"][*i];
        }
        node["opts"] = json!({"jobId": id, "timestamp": 1_700_000_000_000_u64, "priority": 3, "removeOnComplete": 5, "failParentOnFailure": path.len() == 1});
    };
    let mut tree = tree_json(&json!({}));
    ids(&mut tree, &[], "root-1");
    ids(&mut tree, &[0], "mid-1");
    ids(&mut tree, &[0, 0], "leaf-1");
    ids(&mut tree, &[1], "sib-1");
    node(&ctx, &["add", &tree.to_string()]);

    let opts = |id: &str, child: bool| {
        JobOptions::new()
            .job_id(id)
            .created_at(1_700_000_000_000_u64)
            .priority(3)
            .remove_on_complete(bullmq::KeepJobs::Number(5))
            .fail_parent_on_failure(child)
    };
    let rust = FlowJob::new(q("reports"), "root", json!({"r": 1, "text": "ünï"}))
        .opts(opts("root-1", false))
        .child(
            FlowJob::new(q("renders"), "mid", json!({"m": [1, 2]}))
                .opts(opts("mid-1", true))
                .child(FlowJob::new(q("leaves"), "leaf", json!({})).opts(opts("leaf-1", false))),
        )
        .child(FlowJob::new(q("renders"), "sib", json!({"s": null})).opts(opts("sib-1", true)));
    twin.producer().await.add(rust).await.unwrap();

    // Unprocessed children come from a Redis set, whose order is its own business: compare
    // the trees with each node's children sorted by id.
    let from_node = sorted_children(node_get_flow(&ctx, "reports", "root-1")).to_string();
    let from_rust = sorted_children(node_get_flow(&twin, "reports", "root-1"))
        .to_string()
        .replace(&twin.prefix, &ctx.prefix);
    assert_eq!(from_rust, from_node);
    // And the raw job hashes match field by field.
    let mut con = support::redis().await;
    for key in [
        "reports:root-1",
        "renders:mid-1",
        "leaves:leaf-1",
        "renders:sib-1",
    ] {
        let a: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(format!("{}:{key}", ctx.prefix))
            .query_async(&mut con)
            .await
            .unwrap();
        let b: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(format!("{}:{key}", twin.prefix))
            .query_async(&mut con)
            .await
            .unwrap();
        let b: Vec<(String, String)> = b
            .into_iter()
            .map(|(k, v)| (k, v.replace(&twin.prefix, &ctx.prefix)))
            .collect();
        assert_eq!(b, a, "job hash {key}");
    }
}

/// A policy, the tree's children (`ok` is left out for continueParentOnFailure, whose parent
/// starts as soon as the child fails), and what the parent ends as.
struct Policy {
    name: &'static str,
    opts: Value,
    with_ok: bool,
}

const POLICIES: [(&str, bool); 4] = [
    ("failParentOnFailure", true),
    ("continueParentOnFailure", false),
    ("ignoreDependencyOnFailure", true),
    ("removeDependencyOnFailure", true),
];

fn policy_tree(p: &Policy) -> Value {
    let mut children =
        vec![json!({"queueName": "kids", "name": "fail-x", "data": {}, "opts": p.opts})];
    if p.with_ok {
        children.insert(0, json!({"queueName": "kids", "name": "ok", "data": {}}));
    }
    json!({"queueName": "parents", "name": "parent", "data": {}, "children": children})
}

fn policy_rust(p: &Policy) -> FlowJob {
    let o = JobOptions::new();
    let opts = match p.name {
        "failParentOnFailure" => o.fail_parent_on_failure(true),
        "continueParentOnFailure" => o.continue_parent_on_failure(true),
        "ignoreDependencyOnFailure" => o.ignore_dependency_on_failure(true),
        _ => o.remove_dependency_on_failure(true),
    };
    let mut tree = FlowJob::new(q("parents"), "parent", json!({}));
    if p.with_ok {
        tree = tree.child(FlowJob::new(q("kids"), "ok", json!({})));
    }
    tree.child(FlowJob::new(q("kids"), "fail-x", json!({})).opts(opts))
}

/// Checks how the parent ended under policy `p`.
async fn check_parent(ctx: &Ctx, p: &Policy, parent: &JobId, fail_id: &str) {
    let fail_key = format!("{}:kids:{fail_id}", ctx.prefix);
    let job = ctx.job("parents", parent).await;
    match p.name {
        "failParentOnFailure" => {
            assert_eq!(
                job.failed_reason.unwrap(),
                format!("child {fail_key} failed")
            );
        }
        other => {
            let value: Value = job.return_value_as().unwrap().unwrap();
            let ignored = if other == "removeDependencyOnFailure" {
                json!({})
            } else {
                json!({ fail_key: "boom fail-x" })
            };
            assert_eq!(value["ignored"], ignored, "{other}");
            assert_eq!(
                value["children"].as_object().unwrap().len(),
                usize::from(p.with_ok),
                "{other}"
            );
        }
    }
}

#[tokio::test]
async fn every_failure_policy_behaves_alike_in_both_directions() {
    for (name, with_ok) in POLICIES {
        let p = Policy {
            name,
            opts: json!({ name: true }),
            with_ok,
        };
        let end = if name == "failParentOnFailure" {
            JobState::Failed
        } else {
            JobState::Completed
        };

        // Node adds, Rust runs.
        let ctx = Ctx::new();
        let added = node(&ctx, &["add", &policy_tree(&p).to_string()]);
        let parent = id_of(&added);
        let fail_id = added["children"][usize::from(with_ok)]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        {
            let _parents = ctx.worker("parents").await;
            let _kids = ctx.worker("kids").await;
            ctx.wait_state("parents", &parent, end).await;
        }
        check_parent(&ctx, &p, &parent, &fail_id).await;

        // Rust adds, Node runs.
        let ctx = Ctx::new();
        let added = ctx.producer().await.add(policy_rust(&p)).await.unwrap();
        let finished = 2 + usize::from(with_ok);
        assert_eq!(
            node(&ctx, &["work", "parents,kids", &finished.to_string()]),
            json!(finished),
            "{name}"
        );
        let fail_id = added.children.last().unwrap().job.id.to_string();
        ctx.wait_state("parents", &added.job.id, end).await;
        check_parent(&ctx, &p, &added.job.id, &fail_id).await;
    }
}

/// `tree` with every node's children sorted by job id.
fn sorted_children(mut tree: Value) -> Value {
    if let Some(children) = tree.get_mut("children").and_then(Value::as_array_mut) {
        let mut sorted: Vec<Value> = children.drain(..).map(sorted_children).collect();
        sorted.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        *children = sorted;
    }
    tree
}
