//! Flows with `FlowProducer`: trees across queues (one store), parents that wait for their
//! children, every failure policy, reading trees back, processors that add children.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bullmq::backend::{DependenciesQuery, DependencyKind, Lifecycle};
use bullmq::flow::{FlowJob, FlowOptions, FlowProducer, GetFlowOptions, JobNode};
use bullmq::job::JobType;
use bullmq::{
    ActiveJob, CancellationToken, Error, JobError, JobId, JobOptions, JobState, ParentOptions,
    ProcessResult, ScriptErrorCode, Worker,
};
use serde_json::{Value, json};

use crate::ctx::{Ctx, WAIT, dedup_on, fast, q, worker_on};
use crate::store::Store;
use crate::support::eventually;
use crate::support::flows::{assert_reports_tree_read_back, reports_tree, wide_tree_by_depth};
use crate::support::standard_flow_processor as standard;

impl<S: Store> Ctx<S> {
    async fn producer(&self) -> FlowProducer<S::B> {
        FlowProducer::new(self.backend().await)
    }

    async fn state_in(&self, queue: &str, id: &JobId) -> Option<JobState> {
        self.other(queue).await.get_job_state(id).await.unwrap()
    }

    async fn wait_in(&self, queue: &str, id: &JobId, state: JobState) {
        let queue_ = self.other(queue).await;
        eventually(&format!("job {id} of {queue} {state:?}"), WAIT, || async {
            queue_.get_job_state(id).await.unwrap() == Some(state)
        })
        .await;
    }

    async fn job_in(&self, queue: &str, id: &JobId) -> bullmq::Job {
        self.other(queue).await.get_job(id).await.unwrap().unwrap()
    }

    async fn key_of(&self, queue: &str, id: &JobId) -> String {
        Self::key_in(&self.other(queue).await, id)
    }

    async fn completed_value(&self, queue: &str, id: &JobId) -> Value {
        self.wait_in(queue, id, JobState::Completed).await;
        self.job_in(queue, id)
            .await
            .return_value_as()
            .unwrap()
            .unwrap()
    }

    /// A worker on `queue` running [`standard`].
    async fn standard_worker(
        &self,
        queue: &str,
    ) -> Worker<
        S::B,
        impl Fn(
            ActiveJob<S::B>,
            CancellationToken,
        ) -> std::pin::Pin<Box<dyn Future<Output = ProcessResult> + Send>>
        + Send
        + Sync
        + 'static,
    > {
        worker_on(self, queue, fast().concurrency(4), |job, c| {
            Box::pin(standard(job, c))
                as std::pin::Pin<Box<dyn Future<Output = ProcessResult> + Send>>
        })
        .await
    }
}

/// Children sorted by id at every level, for comparing trees read from sets.
fn sorted(node: &JobNode) -> Value {
    let mut children: Vec<Value> = node.children.iter().map(sorted).collect();
    children.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    json!({
        "queue": node.queue.as_str(),
        "id": node.job.id.as_str(),
        "name": node.job.name,
        "data": serde_json::from_str::<Value>(&node.job.data).unwrap(),
        "attempts": node.job.opts.attempts,
        "parentKey": node.job.parent_key,
        "children": children,
    })
}

pub async fn a_tree_spans_queues_and_reads_back_whole<S: Store>() {
    let ctx = Ctx::<S>::new("reports").await;
    let producer = ctx.producer().await;
    let added = producer.add(reports_tree(None)).await.unwrap();
    let (root, mid, sib) = (&added.job, &added.children[0], &added.children[1]);
    let leaf = &mid.children[0];
    assert_eq!(root.id.as_str().len(), 36, "a generated id is a UUID");
    assert_eq!(sib.job.id.as_str(), "sib-1");
    assert_eq!(
        ctx.state_in("reports", &root.id).await,
        Some(JobState::WaitingChildren)
    );
    assert_eq!(
        ctx.state_in("renders", &mid.job.id).await,
        Some(JobState::WaitingChildren)
    );
    assert_eq!(
        ctx.state_in("renders", &sib.job.id).await,
        Some(JobState::Waiting)
    );
    assert_eq!(
        ctx.state_in("leaves", &leaf.job.id).await,
        Some(JobState::Waiting)
    );
    let stored_leaf = ctx.job_in("leaves", &leaf.job.id).await;
    let mid_key = ctx.key_of("renders", &mid.job.id).await;
    assert_eq!(stored_leaf.parent_key.as_deref(), Some(mid_key.as_str()));
    let parent = stored_leaf.parent.unwrap();
    assert_eq!(parent.id.as_deref(), Some(mid.job.id.as_str()));
    assert_eq!(
        parent.queue_key,
        ctx.other("renders").await.backend().qualified_name()
    );

    let sib_key = ctx.key_of("renders", &JobId::from("sib-1")).await;
    let reports = ctx.other("reports").await;
    assert_reports_tree_read_back(&producer, &reports, &added, vec![mid_key, sib_key], sorted)
        .await;
    let missing = producer
        .get_flow(&GetFlowOptions::new(q("reports"), "nope"))
        .await
        .unwrap();
    assert!(missing.is_none());
}

pub async fn get_flow_honours_depth_and_max_children<S: Store>() {
    let ctx = Ctx::<S>::new("top").await;
    let producer = ctx.producer().await;
    let (added, full) = wide_tree_by_depth(&producer, 30, 100).await;
    assert_eq!(sorted(&full), sorted(&added));
}

pub async fn the_parent_runs_after_its_children_and_reads_their_values<S: Store>() {
    let ctx = Ctx::<S>::new("reports").await;
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
    let w1 = ctx.standard_worker("reports").await;
    let w2 = ctx.standard_worker("renders").await;
    let w3 = ctx.standard_worker("leaves").await;
    let value = ctx.completed_value("reports", &added.job.id).await;
    let mid = ctx.job_in("renders", &added.children[0].job.id).await;
    let mid_key = ctx.key_of("renders", &mid.id).await;
    assert_eq!(value["children"][&mid_key]["name"], "mid");
    assert_eq!(
        value["children"][&mid_key]["children"]
            .as_object()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(value["children"].as_object().unwrap().len(), 2);
    let root = ctx.job_in("reports", &added.job.id).await;
    assert!(root.processed_on.unwrap() >= mid.finished_on.unwrap());
    for w in [&w1, &w2, &w3] {
        w.close().await;
    }
}

/// A parent in `parents` with a child `ok` and a child `fail-x` (in `kids`) carrying `policy`.
async fn policy_flow<S: Store>(ctx: &Ctx<S>, policy: JobOptions) -> JobNode {
    ctx.producer()
        .await
        .add(
            FlowJob::new(q("parents"), "parent", json!({}))
                .child(FlowJob::new(q("kids"), "ok", json!({})))
                .child(FlowJob::new(q("kids"), "fail-x", json!({})).opts(policy)),
        )
        .await
        .unwrap()
}

/// Adds [`policy_flow`] with `policy`, starts the parents' worker and runs the kids until the
/// failing one failed: the flow, the failing child's id and the parents' worker.
async fn run_policy_flow<S: Store>(
    ctx: &Ctx<S>,
    policy: JobOptions,
) -> (
    JobNode,
    JobId,
    Worker<S::B, impl bullmq::Processor<S::B> + use<'_, S>>,
) {
    let added = policy_flow(ctx, policy).await;
    let fail_id = added.children[1].job.id.clone();
    let parents = ctx.standard_worker("parents").await;
    run_kids(ctx, &fail_id).await;
    (added, fail_id, parents)
}

/// [`run_policy_flow`] until the parent completed: its return value, the flow and the failing
/// child's id.
async fn parent_value_under<S: Store>(ctx: &Ctx<S>, policy: JobOptions) -> (Value, JobNode, JobId) {
    let (added, fail_id, parents) = run_policy_flow(ctx, policy).await;
    let value = ctx.completed_value("parents", &added.job.id).await;
    parents.close().await;
    (value, added, fail_id)
}

/// Runs the kids until the failing one failed.
async fn run_kids<S: Store>(ctx: &Ctx<S>, fail_id: &JobId) {
    let kids = ctx.standard_worker("kids").await;
    ctx.wait_in("kids", fail_id, JobState::Failed).await;
    kids.close().await;
}

pub async fn fail_parent_on_failure_fails_the_parent<S: Store>() {
    let ctx = Ctx::<S>::new("parents").await;
    let (added, fail_id, parents) =
        run_policy_flow(&ctx, JobOptions::new().fail_parent_on_failure(true)).await;
    ctx.wait_in("parents", &added.job.id, JobState::Failed)
        .await;
    let parent = ctx.job_in("parents", &added.job.id).await;
    let child_key = ctx.key_of("kids", &fail_id).await;
    assert_eq!(
        parent.failed_reason.as_deref(),
        Some(format!("child {child_key} failed").as_str())
    );
    let deps = ctx
        .other("parents")
        .await
        .job(added.job.id.clone())
        .get_dependencies(&DependenciesQuery {
            lists: vec![(DependencyKind::Failed, 0, 10)],
        })
        .await
        .unwrap();
    assert_eq!(deps.failed.unwrap().0, vec![child_key]);
    parents.close().await;
}

pub async fn continue_parent_on_failure_starts_the_parent_at_once<S: Store>() {
    // The other child sits in a queue nobody works: the parent starts anyway, reads the
    // failure, and (still having a pending child) cannot complete, so it fails.
    let ctx = Ctx::<S>::new("parents").await;
    let added = ctx
        .producer()
        .await
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
    let seen_ = seen.clone();
    let parents = worker_on(&ctx, "parents", fast(), move |job, _| {
        let seen = seen_.clone();
        async move {
            let failures = job.handle().get_ignored_children_failures().await?;
            *seen.lock().unwrap() = Some(failures);
            Ok(json!("done"))
        }
    })
    .await;
    run_kids(&ctx, &fail_id).await;
    ctx.wait_in("parents", &added.job.id, JobState::Failed)
        .await;
    let failures = seen.lock().unwrap().clone().expect("the parent ran");
    let child_key = ctx.key_of("kids", &fail_id).await;
    assert_eq!(
        failures.get(&child_key).map(String::as_str),
        Some("boom fail-x")
    );
    let parent = ctx.job_in("parents", &added.job.id).await;
    assert_eq!(
        parent.failed_reason.unwrap(),
        format!(
            "Job {} has pending dependencies. moveToFinished",
            added.job.id
        )
    );
    assert_eq!(
        ctx.state_in("idle", &added.children[0].job.id).await,
        Some(JobState::Waiting)
    );
    parents.close().await;
}

pub async fn ignore_dependency_on_failure_records_the_failure<S: Store>() {
    let ctx = Ctx::<S>::new("parents").await;
    let policy = JobOptions::new().ignore_dependency_on_failure(true);
    let (value, added, fail_id) = parent_value_under(&ctx, policy).await;
    let ok_key = ctx.key_of("kids", &added.children[0].job.id).await;
    let fail_key = ctx.key_of("kids", &fail_id).await;
    assert_eq!(value["children"].as_object().unwrap().len(), 1);
    assert_eq!(value["children"][&ok_key]["name"], "ok");
    assert_eq!(value["ignored"], json!({ fail_key: "boom fail-x" }));
}

pub async fn remove_dependency_on_failure_drops_the_child<S: Store>() {
    let ctx = Ctx::<S>::new("parents").await;
    let policy = JobOptions::new().remove_dependency_on_failure(true);
    let (value, _, _) = parent_value_under(&ctx, policy).await;
    assert_eq!(value["children"].as_object().unwrap().len(), 1);
    assert_eq!(value["ignored"], json!({}));
}

pub async fn without_a_policy_the_parent_keeps_waiting<S: Store>() {
    let ctx = Ctx::<S>::new("parents").await;
    let (added, _, parents) = run_policy_flow(&ctx, JobOptions::new()).await;
    ctx.wait_in("kids", &added.children[0].job.id, JobState::Completed)
        .await;
    // Both children are finished, and a child's finish moves its parent in the same step:
    // the parent's state is settled, no pause needed.
    assert_eq!(
        ctx.state_in("parents", &added.job.id).await,
        Some(JobState::WaitingChildren)
    );
    parents.close().await;
}

pub async fn a_parent_whose_children_already_completed_is_released<S: Store>() {
    // 6.7's deferred release: the children exist and completed before the flow is added.
    let ctx = Ctx::<S>::new("parents").await;
    let kids = ctx.other("kids").await;
    for id in ["done-1", "done-2"] {
        kids.add("done", &json!({}), JobOptions::new().job_id(id))
            .await
            .unwrap();
    }
    let worker = ctx.standard_worker("kids").await;
    for id in ["done-1", "done-2"] {
        ctx.wait_in("kids", &JobId::from(id), JobState::Completed)
            .await;
    }
    worker.close().await;
    let child =
        |id: &str| FlowJob::new(q("kids"), "done", json!({})).opts(JobOptions::new().job_id(id));
    let added = ctx
        .producer()
        .await
        .add(
            FlowJob::new(q("parents"), "parent", json!({}))
                .child(child("done-1"))
                .child(child("done-2")),
        )
        .await
        .unwrap();
    assert_eq!(
        ctx.state_in("parents", &added.job.id).await,
        Some(JobState::Waiting)
    );
    let values = ctx
        .other("parents")
        .await
        .job(added.job.id.clone())
        .get_children_values()
        .await
        .unwrap();
    assert_eq!(values.len(), 2);
}

pub async fn a_processor_adds_children_and_waits_for_them<S: Store>() {
    let ctx = Ctx::<S>::new("steps").await;
    let runs = Arc::new(AtomicUsize::new(0));
    let runs_ = runs.clone();
    let job = ctx.add("sum", json!({"step": 0}), JobOptions::new()).await;
    let adders = worker_on(&ctx, "adders", fast(), |job, _| async move {
        let n = job.data_as::<Value>()?["n"].as_i64().unwrap_or(0);
        Ok(json!(n * 10))
    })
    .await;
    let adders_queue = Arc::new(ctx.other("adders").await);
    let steps = ctx
        .worker(fast(), move |job, _| {
            let runs = runs_.clone();
            let adders_queue = adders_queue.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                if job.data_as::<Value>()?["step"] == 0 {
                    let parent = job.handle().as_parent();
                    for n in [1, 2] {
                        adders_queue
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
    ctx.wait_state(&job, JobState::Completed).await;
    assert_eq!(
        ctx.job(&job).await.return_value.as_deref(),
        Some(r#"{"sum":30}"#)
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    steps.close().await;
    adders.close().await;
}

pub async fn waiting_for_a_failed_child_fails_the_job_for_good<S: Store>() {
    // A step adds a child with failParentOnFailure, which fails while the parent is still
    // active; parking the parent is then refused and the parent fails without retry.
    let ctx = Ctx::<S>::new("steps").await;
    let job = ctx.add_with("step", JobOptions::new().attempts(3)).await;
    let kids = ctx.standard_worker("kids").await;
    let kids_queue = Arc::new(ctx.other("kids").await);
    let steps = ctx
        .worker(fast(), move |job, _| {
            let kids_queue = kids_queue.clone();
            async move {
                let parent = job.handle().as_parent();
                let child = kids_queue
                    .add(
                        "fail-child",
                        &json!({}),
                        JobOptions::new()
                            .parent(parent)
                            .fail_parent_on_failure(true),
                    )
                    .await?;
                eventually("the child to fail", WAIT, || async {
                    kids_queue.get_job_state(&child.id).await.unwrap() == Some(JobState::Failed)
                })
                .await;
                Err(JobError::WaitingChildren)
            }
        })
        .await;
    ctx.wait_state(&job, JobState::Failed).await;
    let failed = ctx.job(&job).await;
    assert_eq!(
        failed.failed_reason.unwrap(),
        format!(
            "Cannot complete job {job} because it has at least one failed child. moveToWaitingChildren"
        )
    );
    assert_eq!(failed.attempts_made, 1, "not retried");
    steps.close().await;
    kids.close().await;
}

pub async fn add_bulk_adds_every_tree_with_queue_defaults<S: Store>() {
    let ctx = Ctx::<S>::new("p").await;
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
            ctx.state_in("p", &tree.job.id).await,
            Some(JobState::WaitingChildren)
        );
        let own = ctx.job_in("c", &tree.children[0].job.id).await;
        let default = ctx.job_in("c", &tree.children[1].job.id).await;
        assert_eq!((own.opts.attempts, own.opts.lifo), (Some(2), Some(true)));
        assert_eq!(
            (default.opts.attempts, default.opts.lifo),
            (Some(7), Some(true))
        );
        let parent = ctx.job_in("p", &tree.job.id).await;
        assert_eq!(parent.opts.attempts, Some(0), "defaults are per queue");
    }
    let waiting = ctx
        .other("c")
        .await
        .get_job_counts(&[JobType::Wait])
        .await
        .unwrap();
    assert_eq!(waiting[0].1, 6);
}

pub async fn bad_flows_are_refused_before_anything_is_written<S: Store>() {
    let ctx = Ctx::<S>::new("p").await;
    let producer = ctx.producer().await;
    // The first problem's path and the error's text.
    let problem = |err: Error| match err {
        Error::Invalid(e) => (e.problems()[0].path.clone(), e.to_string()),
        other => panic!("expected a validation error, got {other:?}"),
    };

    let dedup_parent = FlowJob::new(q("p"), "parent", json!({}))
        .opts(dedup_on("d1"))
        .child(FlowJob::new(q("c"), "child", json!({})));
    let (path, text) = problem(producer.add(dedup_parent).await.unwrap_err());
    assert_eq!(path, "deduplication");
    assert!(text.contains("flow node with children"), "{text}");

    let dedup_child = FlowJob::new(q("p"), "parent", json!({}))
        .child(FlowJob::new(q("c"), "child", json!({})).opts(dedup_on("d2")));
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
    for queue in ["p", "c"] {
        assert_eq!(
            ctx.other(queue)
                .await
                .get_job_counts(&[])
                .await
                .unwrap()
                .iter()
                .map(|c| c.1)
                .sum::<u64>(),
            0
        );
    }
    // A root attached to a parent that does not exist: the store's refusal.
    let orphan = FlowJob::new(q("p"), "orphan", json!({})).opts(JobOptions::new().parent(
        ParentOptions::new("missing", ctx.queue.backend().qualified_name()),
    ));
    match producer.add(orphan).await.unwrap_err() {
        Error::Script(e) => assert_eq!(e.code, ScriptErrorCode::ParentNotFound),
        other => panic!("expected ParentNotFound, got {other:?}"),
    }
}
