//! `FlowProducer` against a real Redis: trees across queues and prefixes, bulk adds, reading
//! trees back with depth and child limits, per-queue defaults, bad input refused before
//! anything is written, Rust workers running trees under every failure policy, 6.7's deferred
//! parent release, and the "process step" pattern (a processor adding children and waiting
//! for them).

#![allow(clippy::unwrap_used)]

mod redis_flow_support;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bullmq::core::backend::{DependenciesQuery, DependencyKind, Lifecycle};
use bullmq::flow::{FlowJob, FlowOptions, GetFlowOptions};
use bullmq::{Deduplication, ParentOptions};
use bullmq::{Error, JobError, JobId, JobOptions, JobState, ScriptErrorCode};
use redis_flow_support::{Ctx, eventually, norm, q, standard};
use serde_json::{Value, json};

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

async fn key_count(prefix: &str) -> usize {
    let mut con = support::redis().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(&mut con)
        .await
        .unwrap();
    keys.len()
}

#[tokio::test]
async fn a_tree_spans_queues_and_prefixes_and_reads_back_whole() {
    let ctx = Ctx::new();
    let producer = ctx.producer().await;
    let other = ctx.other_prefix();
    let tree = FlowJob::new(q("reports"), "root", json!({"r": 1}))
        .child(
            FlowJob::new(q("renders"), "mid", json!({"m": 1}))
                .child(FlowJob::new(q("leaves"), "leaf", json!({"l": 1})).prefix(other.clone())),
        )
        .child(
            FlowJob::new(q("renders"), "sib", json!({}))
                .opts(JobOptions::new().job_id("sib-1").attempts(3)),
        );
    let added = producer.add(tree).await.unwrap();
    let (root, mid, sib) = (&added.job, &added.children[0], &added.children[1]);
    let leaf = &mid.children[0];
    assert_eq!(root.id.as_str().len(), 36, "a generated id is a UUID");
    assert_eq!(sib.job.id.as_str(), "sib-1");
    assert_eq!(leaf.prefix, other);

    assert_eq!(
        ctx.state("reports", &root.id).await,
        Some(JobState::WaitingChildren)
    );
    assert_eq!(
        ctx.state("renders", &mid.job.id).await,
        Some(JobState::WaitingChildren)
    );
    assert_eq!(
        ctx.state("renders", &sib.job.id).await,
        Some(JobState::Waiting)
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
    let deps = reports
        .job(root.id.clone())
        .get_dependencies(&DependenciesQuery::default())
        .await
        .unwrap();
    let mut pending = deps.unprocessed.unwrap().0;
    pending.sort();
    let mut expected = vec![mid_key, format!("{}:renders:sib-1", ctx.prefix)];
    expected.sort();
    assert_eq!(pending, expected);

    let read = producer
        .get_flow(&GetFlowOptions::new(q("reports"), root.id.clone()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sorted(norm(&read)), sorted(norm(&added)));
    assert_eq!(read.iter().count(), 4);
}

#[tokio::test]
async fn get_flow_honours_depth_and_max_children() {
    let ctx = Ctx::new();
    let producer = ctx.producer().await;
    let kids = (0..200).map(|i| {
        FlowJob::new(q("kids"), format!("kid-{i}"), json!({"i": i})).child(FlowJob::new(
            q("grandkids"),
            "g",
            json!({"i": i}),
        ))
    });
    let added = producer
        .add(FlowJob::new(q("top"), "top", json!({})).children(kids))
        .await
        .unwrap();
    let id = added.job.id.clone();
    let get = |opts: GetFlowOptions| {
        let producer = &producer;
        async move { producer.get_flow(&opts).await.unwrap().unwrap() }
    };

    let only_root = get(GetFlowOptions::new(q("top"), id.clone()).depth(1)).await;
    assert!(only_root.children.is_empty());

    let two = get(GetFlowOptions::new(q("top"), id.clone())
        .depth(2)
        .max_children(500))
    .await;
    assert_eq!(two.children.len(), 200);
    assert!(two.children.iter().all(|c| c.children.is_empty()));

    let full = get(GetFlowOptions::new(q("top"), id.clone())
        .depth(3)
        .max_children(500))
    .await;
    assert_eq!(full.iter().count(), 401);

    // A set of 200 is a hash table, so `SSCAN … COUNT 5` reads a few, as Node's getFlow does.
    let few = get(GetFlowOptions::new(q("top"), id.clone()).max_children(5)).await;
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

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_written() {
    let ctx = Ctx::new();
    let producer = ctx.producer().await;
    let problem = |err: Error| match err {
        Error::Invalid(e) => {
            let p = &e.problems()[0];
            (p.path.clone(), e.to_string())
        }
        other => panic!("expected a validation error, got {other:?}"),
    };

    let dedup_parent = FlowJob::new(q("p"), "parent", json!({}))
        .opts(JobOptions::new().deduplication(Deduplication::new("d1")))
        .child(FlowJob::new(q("c"), "child", json!({})));
    let (path, text) = problem(producer.add(dedup_parent).await.unwrap_err());
    assert_eq!(path, "deduplication");
    assert!(text.contains("flow node with children"), "{text}");

    let dedup_child = FlowJob::new(q("p"), "parent", json!({})).child(
        FlowJob::new(q("c"), "child", json!({}))
            .opts(JobOptions::new().deduplication(Deduplication::new("d2"))),
    );
    let (path, text) = problem(producer.add(dedup_child).await.unwrap_err());
    assert_eq!(path, "deduplication");
    assert!(
        text.contains("cannot be used together with parent"),
        "{text}"
    );
    assert!(text.contains("job \"child\" of queue c"), "{text}");

    let exclusive = FlowJob::new(q("p"), "parent", json!({})).child(
        FlowJob::new(q("c"), "child", json!({})).opts(
            JobOptions::new()
                .fail_parent_on_failure(true)
                .ignore_dependency_on_failure(true),
        ),
    );
    let (path, _) = problem(producer.add(exclusive).await.unwrap_err());
    assert_eq!(path, "failParentOnFailure");

    let too_big = FlowJob::new(q("p"), "parent", json!({})).child(
        FlowJob::new(q("c"), "child", json!({"x": "0123456789"}))
            .opts(JobOptions::new().size_limit(5)),
    );
    let (path, _) = problem(producer.add(too_big).await.unwrap_err());
    assert_eq!(path, "sizeLimit");

    // One bad tree in a bulk stops the whole bulk.
    let good = FlowJob::new(q("p"), "ok", json!({})).child(FlowJob::new(q("c"), "c", json!({})));
    let bad = FlowJob::new(q("p"), "bad", json!({}))
        .child(FlowJob::new(q("c"), "c", json!({})).opts(JobOptions::new().job_id("42")));
    let (path, _) = problem(producer.add_bulk(vec![good, bad]).await.unwrap_err());
    assert_eq!(path, "jobId");

    assert_eq!(key_count(&ctx.prefix).await, 0, "nothing was written");

    // A root attached to a parent that does not exist: the script's refusal, as in Node.
    let orphan = FlowJob::new(q("p"), "orphan", json!({}))
        .opts(JobOptions::new().parent(ParentOptions::new("missing", format!("{}:p", ctx.prefix))));
    match producer.add(orphan).await.unwrap_err() {
        Error::Script(e) => assert_eq!(e.code, ScriptErrorCode::ParentNotFound),
        other => panic!("expected ParentNotFound, got {other:?}"),
    }
}

#[tokio::test]
async fn add_bulk_adds_every_tree_and_queue_defaults_apply() {
    let ctx = Ctx::new();
    let producer = ctx.producer().await;
    let trees = (0..3).map(|i| {
        FlowJob::new(q("p"), format!("p{i}"), json!({"i": i}))
            .child(FlowJob::new(q("c"), "own", json!({})).opts(JobOptions::new().attempts(2)))
            .child(FlowJob::new(q("c"), "default", json!({})))
    });
    let opts = FlowOptions::new().queue_defaults(&q("c"), JobOptions::new().attempts(7).lifo(true));
    let added = producer
        .add_bulk_with(trees.collect(), &opts)
        .await
        .unwrap();
    assert_eq!(added.len(), 3);
    for tree in &added {
        assert_eq!(
            ctx.state("p", &tree.job.id).await,
            Some(JobState::WaitingChildren)
        );
        let own = ctx.job("c", &tree.children[0].job.id).await;
        let default = ctx.job("c", &tree.children[1].job.id).await;
        assert_eq!((own.opts.attempts, own.opts.lifo), (Some(2), Some(true)));
        assert_eq!(
            (default.opts.attempts, default.opts.lifo),
            (Some(7), Some(true))
        );
        let parent = ctx.job("p", &tree.job.id).await;
        assert_eq!(parent.opts.attempts, Some(0), "defaults are per queue");
    }
    let counts = ctx.queue("c").await;
    let waiting = counts
        .get_job_counts(&[bullmq::core::job::JobType::Wait])
        .await;
    assert_eq!(waiting.unwrap()[0].1, 6);
}

#[tokio::test]
async fn the_parent_runs_after_its_children_and_reads_their_values() {
    let ctx = Ctx::new();
    let producer = ctx.producer().await;
    let added = producer
        .add(
            FlowJob::new(q("reports"), "root", json!({}))
                .child(
                    FlowJob::new(q("renders"), "mid", json!({})).child(FlowJob::new(
                        q("leaves"),
                        "leaf",
                        json!({}),
                    )),
                )
                .child(FlowJob::new(q("renders"), "sib", json!({}))),
        )
        .await
        .unwrap();
    let _w1 = ctx.worker("reports").await;
    let _w2 = ctx.worker("renders").await;
    let _w3 = ctx.worker("leaves").await;
    ctx.wait_state("reports", &added.job.id, JobState::Completed)
        .await;

    let root = ctx.job("reports", &added.job.id).await;
    let mid = ctx.job("renders", &added.children[0].job.id).await;
    let value: Value = root.return_value_as().unwrap().unwrap();
    let mid_key = format!("{}:renders:{}", ctx.prefix, mid.id);
    assert_eq!(value["children"][&mid_key]["name"], "mid");
    assert_eq!(
        value["children"][&mid_key]["children"]
            .as_object()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(value["children"].as_object().unwrap().len(), 2);
    assert!(root.processed_on.unwrap() >= mid.finished_on.unwrap());
}

/// A parent in `parents` with a child `ok` and a child `fail-x` (in `kids`) carrying `policy`;
/// one worker on `kids` takes `ok` first. Returns the context, the tree and the failing child.
async fn run_policy(policy: JobOptions) -> (Ctx, bullmq::flow::JobNode) {
    let ctx = Ctx::new();
    let producer = ctx.producer().await;
    let added = producer
        .add(
            FlowJob::new(q("parents"), "parent", json!({}))
                .child(FlowJob::new(q("kids"), "ok", json!({})))
                .child(FlowJob::new(q("kids"), "fail-x", json!({})).opts(policy)),
        )
        .await
        .unwrap();
    (ctx, added)
}

async fn run_kids(ctx: &Ctx, fail_id: &JobId) {
    let kids = ctx.worker_with("kids", standard).await;
    ctx.wait_state("kids", fail_id, JobState::Failed).await;
    drop(kids);
}

#[tokio::test]
async fn fail_parent_on_failure_fails_the_parent() {
    let (ctx, added) = run_policy(JobOptions::new().fail_parent_on_failure(true)).await;
    let fail_id = added.children[1].job.id.clone();
    let _parents = ctx.worker("parents").await;
    run_kids(&ctx, &fail_id).await;
    ctx.wait_state("parents", &added.job.id, JobState::Failed)
        .await;
    let parent = ctx.job("parents", &added.job.id).await;
    let child_key = format!("{}:kids:{fail_id}", ctx.prefix);
    assert_eq!(
        parent.failed_reason.as_deref(),
        Some(format!("child {child_key} failed").as_str())
    );
    let deps = ctx
        .queue("parents")
        .await
        .job(added.job.id.clone())
        .get_dependencies(&DependenciesQuery {
            lists: vec![(DependencyKind::Failed, 0, 10)],
        })
        .await
        .unwrap();
    assert_eq!(deps.failed.unwrap().0, vec![child_key]);
}

#[tokio::test]
async fn continue_parent_on_failure_starts_the_parent_at_once() {
    // The other child sits in a queue nobody works: the parent starts anyway, reads the
    // failure, and (still having a pending child) cannot complete, so it fails as Node's does.
    let ctx = Ctx::new();
    let producer = ctx.producer().await;
    let added = producer
        .add(
            FlowJob::new(q("parents"), "parent", json!({}))
                .child(FlowJob::new(q("idle"), "ok", json!({})))
                .child(
                    FlowJob::new(q("kids"), "fail-x", json!({}))
                        .opts(JobOptions::new().continue_parent_on_failure(true)),
                ),
        )
        .await
        .unwrap();
    let fail_id = added.children[1].job.id.clone();
    let seen = Arc::new(std::sync::Mutex::new(None));
    let seen_ = Arc::clone(&seen);
    let _parents = ctx
        .worker_with("parents", move |job, _| {
            let seen = Arc::clone(&seen_);
            async move {
                let failures = job.handle().get_ignored_children_failures().await?;
                *seen.lock().unwrap() = Some(failures);
                Ok(json!("done"))
            }
        })
        .await;
    run_kids(&ctx, &fail_id).await;
    ctx.wait_state("parents", &added.job.id, JobState::Failed)
        .await;
    let failures = seen.lock().unwrap().clone().unwrap();
    let child_key = format!("{}:kids:{fail_id}", ctx.prefix);
    assert_eq!(
        failures.get(&child_key).map(String::as_str),
        Some("boom fail-x")
    );
    let parent = ctx.job("parents", &added.job.id).await;
    assert_eq!(
        parent.failed_reason.unwrap(),
        format!(
            "Job {} has pending dependencies. moveToFinished",
            added.job.id
        )
    );
    assert_eq!(
        ctx.state("idle", &added.children[0].job.id).await,
        Some(JobState::Waiting)
    );
}

#[tokio::test]
async fn ignore_dependency_on_failure_records_the_failure_and_goes_on() {
    let (ctx, added) = run_policy(JobOptions::new().ignore_dependency_on_failure(true)).await;
    let fail_id = added.children[1].job.id.clone();
    let _parents = ctx.worker("parents").await;
    run_kids(&ctx, &fail_id).await;
    let value = ctx.completed_value("parents", &added.job.id).await;
    let prefix = &ctx.prefix;
    let ok_key = format!("{prefix}:kids:{}", added.children[0].job.id);
    let fail_key = format!("{prefix}:kids:{fail_id}");
    assert_eq!(value["children"].as_object().unwrap().len(), 1);
    assert_eq!(value["children"][&ok_key]["name"], "ok");
    assert_eq!(value["ignored"], json!({ fail_key: "boom fail-x" }));
}

#[tokio::test]
async fn remove_dependency_on_failure_drops_the_child_and_goes_on() {
    let (ctx, added) = run_policy(JobOptions::new().remove_dependency_on_failure(true)).await;
    let fail_id = added.children[1].job.id.clone();
    let _parents = ctx.worker("parents").await;
    run_kids(&ctx, &fail_id).await;
    let value = ctx.completed_value("parents", &added.job.id).await;
    assert_eq!(value["children"].as_object().unwrap().len(), 1);
    assert_eq!(value["ignored"], json!({}));
}

#[tokio::test]
async fn without_a_policy_the_parent_keeps_waiting() {
    let (ctx, added) = run_policy(JobOptions::new()).await;
    let fail_id = added.children[1].job.id.clone();
    let _parents = ctx.worker("parents").await;
    run_kids(&ctx, &fail_id).await;
    let ok_id = added.children[0].job.id.clone();
    ctx.wait_state("kids", &ok_id, JobState::Completed).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        ctx.state("parents", &added.job.id).await,
        Some(JobState::WaitingChildren)
    );
}

#[tokio::test]
async fn a_parent_whose_children_already_completed_is_released_after_the_insert() {
    // 6.7's deferred release: the children exist and have completed before the flow is added,
    // so the parent must not stay in waiting-children.
    let ctx = Ctx::new();
    let kids = ctx.queue("kids").await;
    for id in ["done-1", "done-2"] {
        kids.add("done", &json!({}), JobOptions::new().job_id(id))
            .await
            .unwrap();
    }
    let worker = ctx.worker("kids").await;
    for id in ["done-1", "done-2"] {
        ctx.wait_state("kids", &JobId::from(id), JobState::Completed)
            .await;
    }
    drop(worker);
    let producer = ctx.producer().await;
    let added = producer
        .add(
            FlowJob::new(q("parents"), "parent", json!({}))
                .child(
                    FlowJob::new(q("kids"), "done", json!({}))
                        .opts(JobOptions::new().job_id("done-1")),
                )
                .child(
                    FlowJob::new(q("kids"), "done", json!({}))
                        .opts(JobOptions::new().job_id("done-2")),
                ),
        )
        .await
        .unwrap();
    assert_eq!(
        ctx.state("parents", &added.job.id).await,
        Some(JobState::Waiting)
    );
    let values = ctx
        .queue("parents")
        .await
        .job(added.job.id.clone())
        .get_children_values()
        .await
        .unwrap();
    assert_eq!(values.len(), 2);
}

#[tokio::test]
async fn a_processor_adds_children_and_waits_for_them() {
    // Upstream's "process step" pattern: step 0 adds two children and parks the job; the
    // worker runs it again once they completed, and step 1 sums their values.
    let ctx = Ctx::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let runs_ = Arc::clone(&runs);
    let prefix = ctx.prefix();
    let steps = ctx.queue("steps").await;
    let job = steps
        .add("sum", &json!({"step": 0}), JobOptions::new())
        .await
        .unwrap();
    let _kids = ctx
        .worker_with("adders", |job, _| async move {
            let n: i64 = job.data_as::<Value>()?["n"].as_i64().unwrap_or(0);
            Ok(json!(n * 10))
        })
        .await;
    let backend = ctx.backend("steps").await;
    let _steps = ctx
        .worker_with("steps", move |job, _| {
            let runs = Arc::clone(&runs_);
            let prefix = prefix.clone();
            let backend = backend.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let data: Value = job.data_as()?;
                if data["step"] == 0 {
                    let queue =
                        bullmq::Queue::new(q("adders"), backend.for_queue(&q("adders"), None));
                    let parent =
                        ParentOptions::new(job.id.as_str(), format!("{}:steps", prefix.as_str()));
                    for n in [1, 2] {
                        queue
                            .add(
                                "add",
                                &json!({"n": n}),
                                JobOptions::new().parent(parent.clone()),
                            )
                            .await?;
                    }
                    job.update_data(&json!({"step": 1})).await?;
                    return Err(JobError::WaitingChildren);
                }
                let values = job.handle().get_children_values().await?;
                let sum: i64 = values.values().filter_map(Value::as_i64).sum();
                Ok(json!({"sum": sum}))
            }
        })
        .await;
    ctx.wait_state("steps", &job.id, JobState::Completed).await;
    let done = ctx.job("steps", &job.id).await;
    assert_eq!(done.return_value.as_deref(), Some(r#"{"sum":30}"#));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn waiting_for_children_with_a_failed_child_fails_the_job_for_good() {
    // A step adds a child with failParentOnFailure, which fails while the parent is still
    // active; parking the parent is then refused (-9) and, as in Node, the parent fails
    // without retry instead of staying active until the stalled check.
    let ctx = Ctx::new();
    let prefix = ctx.prefix();
    let steps = ctx.queue("steps").await;
    let job = steps
        .add("step", &json!({}), JobOptions::new().attempts(3))
        .await
        .unwrap();
    let _kids = ctx.worker("kids").await;
    let backend = ctx.backend("kids").await;
    let _steps = ctx
        .worker_with("steps", move |job, _| {
            let prefix = prefix.clone();
            let backend = backend.clone();
            async move {
                let kids = bullmq::Queue::new(q("kids"), backend);
                let parent =
                    ParentOptions::new(job.id.as_str(), format!("{}:steps", prefix.as_str()));
                let child = kids
                    .add(
                        "fail-child",
                        &json!({}),
                        JobOptions::new()
                            .parent(parent)
                            .fail_parent_on_failure(true),
                    )
                    .await?;
                eventually("the child to fail", || async {
                    kids.job(child.id.clone()).get_state().await.unwrap() == Some(JobState::Failed)
                })
                .await;
                Err(JobError::WaitingChildren)
            }
        })
        .await;
    ctx.wait_state("steps", &job.id, JobState::Failed).await;
    let failed = ctx.job("steps", &job.id).await;
    assert_eq!(
        failed.failed_reason.unwrap(),
        format!(
            "Cannot complete job {} because it has at least one failed child. moveToWaitingChildren",
            job.id
        )
    );
    assert_eq!(failed.attempts_made, 1, "not retried");
}
