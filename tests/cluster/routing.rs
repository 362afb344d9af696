//! Redis Cluster (issue 16): a private six-node cluster (three primaries, three replicas)
//! started once for this binary. Queues with a hash tag work as on one server (jobs, workers,
//! events, flows, schedulers, admin calls), untagged ones and flows across slots are refused
//! with the fix in the message, queues on all three primaries process at once, and Node.js
//! BullMQ on ioredis `Cluster` shares a queue with us both ways.

use crate::support;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bullmq::job::JobType;
use bullmq::options::ParentOptions;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::scheduler::{JobScheduler, JobTemplate};
use bullmq::{
    ActiveJob, BulkJob, CancellationToken, Error, FlowJob, FlowProducer, JobId, JobOptions,
    JobState, Prefix, ProcessResult, Processor, Queue, QueueEvents, QueueEventsOptions, QueueName,
    RepeatOptions, Worker, WorkerOptions,
};
use serde_json::{Value, json};
use support::delayed::add_delayed;
use support::redis_cluster::{TestCluster, shared};
use support::wait::eventually;

const LIMIT: Duration = Duration::from_secs(30);

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

/// A prefix no other test uses, with a hash tag of its own: `{<unique>}`.
fn tagged_prefix() -> Prefix {
    Prefix::new(format!("{{{}}}", support::unique_prefix())).unwrap()
}

async fn backend(prefix: &Prefix, queue: &str) -> RedisBackend {
    let options = RedisOptions::new(shared().url()).prefix(prefix.clone());
    RedisBackend::connect(&options, q(queue)).await.unwrap()
}

async fn echo(job: ActiveJob<RedisBackend>, _: CancellationToken) -> ProcessResult {
    let data: Value = serde_json::from_str(&job.data).unwrap_or(Value::Null);
    Ok(json!({"by": "rust", "data": data}))
}

async fn worker(
    prefix: &Prefix,
    queue: &str,
    opts: WorkerOptions,
) -> Worker<RedisBackend, impl Processor<RedisBackend>> {
    Worker::new(q(queue), backend(prefix, queue).await, opts, echo)
        .await
        .unwrap()
}

/// Runs a flow of `renders` children under a `reports` root (workers under `prefixes`:
/// the children's, the root's) until its `root` in `reports` completes.
async fn run_flow(prefixes: (&Prefix, &Prefix), reports: &Queue<RedisBackend>, root: &JobId) {
    let renders = worker(prefixes.0, "renders", WorkerOptions::new()).await;
    let reporter = worker(prefixes.1, "reports", WorkerOptions::new()).await;
    eventually("the flow's root completes", LIMIT, || async {
        state(reports, root).await == Some(JobState::Completed)
    })
    .await;
    renders.close().await;
    reporter.close().await;
}

async fn state(queue: &Queue<RedisBackend>, id: &JobId) -> Option<JobState> {
    queue.job(id.clone()).get_state().await.unwrap()
}

async fn count(queue: &Queue<RedisBackend>, state: JobState) -> u64 {
    queue
        .get_job_counts(&[JobType::State(state)])
        .await
        .unwrap()[0]
        .1
}

/// Who processed the job, from its return value.
async fn processed_by(queue: &Queue<RedisBackend>, id: &JobId) -> Value {
    let job = queue.get_job(id).await.unwrap().unwrap();
    let value: Value = serde_json::from_str(job.return_value.as_deref().unwrap_or("null")).unwrap();
    value["by"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untagged_prefix_is_refused_with_the_fix() {
    let options =
        RedisOptions::new(shared().url()).prefix(Prefix::new(support::unique_prefix()).unwrap());
    let refused = RedisBackend::connect(&options, q("mail"))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Invalid(_)), "{refused:?}");
    let message = refused.to_string();
    assert!(
        message.contains("hash tag")
            && message.contains("`{mail}`")
            && message.contains("CROSSSLOT"),
        "{message}"
    );
    // A tag in the queue name is enough.
    let options = options.clone();
    RedisBackend::connect(&options, q("{mail}")).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_workers_events_and_admin_calls_work_on_a_cluster() {
    let prefix = tagged_prefix();
    let queue = Queue::try_new(q("mail"), backend(&prefix, "mail").await)
        .expect("the backend is bound to this queue");
    let events =
        QueueEvents::new(backend(&prefix, "mail").await, QueueEventsOptions::new()).unwrap();
    events.wait_until_ready().await.unwrap();

    let one = queue
        .add("one", &json!({"n": 1}), JobOptions::new())
        .await
        .unwrap();
    let bulk: Vec<_> = (0..50)
        .map(|i| BulkJob {
            name: format!("bulk-{i}"),
            data: json!({"i": i}),
            opts: JobOptions::new(),
        })
        .collect();
    let added = queue.add_bulk(bulk).await.unwrap();
    let delayed = add_delayed(&queue, "later", Duration::from_millis(300)).await;

    let named = worker(
        &prefix,
        "mail",
        WorkerOptions::new().name("w1").concurrency(10),
    )
    .await;
    // Another queue under another tag, maybe on the same node: its worker is not listed.
    let other_prefix = tagged_prefix();
    let _other = worker(
        &other_prefix,
        "mail",
        WorkerOptions::new().name("elsewhere"),
    )
    .await;

    let result = events
        .wait_until_finished(&one.id, Some(LIMIT))
        .await
        .unwrap();
    assert_eq!(result, json!({"by": "rust", "data": {"n": 1}}));
    events
        .wait_until_finished(&delayed.id, Some(LIMIT))
        .await
        .unwrap();
    for job in &added {
        events
            .wait_until_finished(&job.id, Some(LIMIT))
            .await
            .unwrap();
    }
    assert_eq!(count(&queue, JobState::Completed).await, 52);

    let workers = queue.get_workers().await.unwrap();
    let names: Vec<&str> = workers.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(workers.len(), 1, "exactly this queue's worker: {names:?}");
    assert!(names[0].ends_with(":w:w1"), "{names:?}");

    named.close().await;
    let cleaned = queue
        .clean(Duration::ZERO, 10, JobState::Completed)
        .await
        .unwrap();
    assert_eq!(cleaned.len(), 10);
    queue.obliterate(true, 1000).await.unwrap();
    assert_eq!(queue.get_job(&one.id).await.unwrap().map(|j| j.id), None);
    let mut node = TestCluster::node(shared().owner_of(&format!("{prefix}:mail:meta"))).await;
    let left: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:mail:*"))
        .query_async(&mut node)
        .await
        .unwrap();
    assert!(
        left.iter().all(|k| k.ends_with(":events")),
        "obliterate left {left:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_within_one_tag_runs_and_across_slots_is_refused() {
    let prefix = tagged_prefix();
    let producer = FlowProducer::new(backend(&prefix, "any").await);
    let tree = FlowJob::new(q("reports"), "root", json!({}))
        .child(FlowJob::new(q("renders"), "child", json!({"c": 1})))
        .child(FlowJob::new(q("renders"), "child", json!({"c": 2})));
    let added = producer.add(tree).await.unwrap();
    let reports = Queue::try_new(q("reports"), backend(&prefix, "reports").await)
        .expect("the backend is bound to this queue");
    assert_eq!(
        state(&reports, &added.job.id).await,
        Some(JobState::WaitingChildren)
    );

    run_flow((&prefix, &prefix), &reports, &added.job.id).await;

    // Two queues whose names carry different tags (and no tag in the prefix) sit in two slots.
    let untagged = Prefix::new(support::unique_prefix()).unwrap();
    let producer = FlowProducer::new(backend(&untagged, "{a}").await);
    let across =
        FlowJob::new(q("{a}"), "root", json!({})).child(FlowJob::new(q("{b}"), "child", json!({})));
    let refused = producer.add(across).await.unwrap_err();
    assert!(matches!(refused, Error::Invalid(_)), "{refused:?}");
    assert!(refused.to_string().contains("same hash tag"), "{refused}");
    // Nothing of it was written.
    let a = Queue::try_new(q("{a}"), backend(&untagged, "{a}").await)
        .expect("the backend is bound to this queue");
    assert_eq!(count(&a, JobState::WaitingChildren).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_across_prefixes_of_one_tag_runs_and_another_tag_is_refused() {
    // Two prefixes, one tag: one slot.
    let tag = support::unique_prefix();
    let (a, b) = (
        Prefix::new(format!("{{{tag}}}a")).unwrap(),
        Prefix::new(format!("{{{tag}}}b")).unwrap(),
    );
    let producer = FlowProducer::new(backend(&a, "reports").await);
    let tree = FlowJob::new(q("reports"), "root", json!({}))
        .child(FlowJob::new(q("renders"), "child", json!({})).prefix(b.clone()));
    let added = producer.add(tree).await.unwrap();
    let reports = Queue::try_new(q("reports"), backend(&a, "reports").await)
        .expect("the backend is bound to this queue");
    run_flow((&b, &a), &reports, &added.job.id).await;

    // A child under a prefix of another tag, or a job whose parent is in another slot (added
    // in a flow, alone or in bulk): refused before anything is written.
    let other = tagged_prefix();
    let across = FlowJob::new(q("reports"), "root", json!({}))
        .child(FlowJob::new(q("renders"), "child", json!({})).prefix(other.clone()));
    let refused = producer.add(across).await.unwrap_err();
    assert!(matches!(refused, Error::Invalid(_)), "{refused:?}");
    assert!(refused.to_string().contains("same hash tag"), "{refused}");
    let parent_elsewhere = FlowJob::new(q("renders"), "child", json!({}))
        .opts(JobOptions::new().parent(ParentOptions::new("1", format!("{other}:reports"))));
    let refused = producer.add(parent_elsewhere).await.unwrap_err();
    assert!(matches!(refused, Error::Invalid(_)), "{refused:?}");
    assert_eq!(count(&reports, JobState::WaitingChildren).await, 0);
    let renders = Queue::try_new(q("renders"), backend(&b, "renders").await)
        .expect("the backend is bound to this queue");
    let child_elsewhere =
        JobOptions::new().parent(ParentOptions::new("1", format!("{other}:reports")));
    let refused = renders
        .add("child", &json!({}), child_elsewhere.clone())
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Invalid(_)), "{refused:?}");
    assert!(refused.to_string().contains("same hash tag"), "{refused}");
    let bulk = vec![BulkJob {
        name: "child".to_owned(),
        data: json!({}),
        opts: child_elsewhere,
    }];
    let refused = renders.add_bulk(bulk).await.unwrap_err();
    let Error::Bulk(bulk) = &refused else {
        panic!("{refused:?}")
    };
    assert!(bulk.added.is_empty(), "{refused}");
    assert_eq!(bulk.refused[0].index, Some(0));
    assert!(
        matches!(bulk.refused[0].error, Error::Invalid(_)),
        "{refused:?}"
    );
    assert_eq!(count(&renders, JobState::Waiting).await, 0);
    let elsewhere = Queue::try_new(q("renders"), backend(&other, "renders").await)
        .expect("the backend is bound to this queue");
    assert_eq!(count(&elsewhere, JobState::Waiting).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_scheduler_produces_on_a_cluster() {
    let prefix = tagged_prefix();
    let schedulers = JobScheduler::new(backend(&prefix, "ticks").await);
    schedulers
        .upsert(
            "every-100ms",
            &RepeatOptions::every(Duration::from_millis(100)),
            JobTemplate::named("tick").data(json!({"t": 1})),
        )
        .await
        .unwrap();
    let queue = Queue::try_new(q("ticks"), backend(&prefix, "ticks").await)
        .expect("the backend is bound to this queue");
    let w = worker(&prefix, "ticks", WorkerOptions::new()).await;
    eventually("three ticks completed", LIMIT, || async {
        count(&queue, JobState::Completed).await >= 3
    })
    .await;
    w.close().await;
    assert!(schedulers.remove("every-100ms").await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_on_all_three_primaries_process_at_the_same_time() {
    let cluster = shared();
    let tags = cluster.tags_on_every_primary();
    let owners: BTreeSet<u16> = tags.iter().map(|(_, port)| *port).collect();
    assert_eq!(owners.len(), 3);
    // Each queue's only job waits until a job of every queue is active: the test completes
    // only if the three primaries serve their workers at once.
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let mut workers = Vec::new();
    let mut queues = Vec::new();
    for (tag, _) in &tags {
        let prefix = Prefix::new(format!("{{{tag}}}")).unwrap();
        let barrier = Arc::clone(&barrier);
        let w = Worker::new(
            q("spread"),
            backend(&prefix, "spread").await,
            WorkerOptions::new(),
            move |job: ActiveJob<RedisBackend>, _| {
                let barrier = Arc::clone(&barrier);
                async move {
                    barrier.wait().await;
                    Ok(json!(job.data))
                }
            },
        )
        .await
        .unwrap();
        workers.push(w);
        let queue = Queue::try_new(q("spread"), backend(&prefix, "spread").await)
            .expect("the backend is bound to this queue");
        let job = queue
            .add("j", &json!({"tag": tag}), JobOptions::new())
            .await
            .unwrap();
        queues.push((queue, job.id, prefix));
    }
    for (queue, id, prefix) in &queues {
        eventually("every queue's job completes", LIMIT, || async {
            state(queue, id).await == Some(JobState::Completed)
        })
        .await;
        // The job lives on the primary of its tag.
        let owner = cluster.owner_of(&format!("{prefix}:spread:{id}"));
        let mut node = TestCluster::node(owner).await;
        let exists: bool = redis::cmd("EXISTS")
            .arg(format!("{prefix}:spread:{id}"))
            .query_async(&mut node)
            .await
            .unwrap();
        assert!(exists);
    }
    for w in workers {
        w.close().await;
    }
}

/// Runs `cluster-op.mjs <op> <n>` for the queue `queue` under `prefix`; its JSON output.
async fn node(op: &str, n: usize, prefix: &Prefix, queue: &str) -> Value {
    let cluster = shared();
    let nodes = format!(
        "127.0.0.1:{},127.0.0.1:{}",
        cluster.ports[0], cluster.ports[1]
    );
    let (op, n, prefix, queue) = (
        op.to_owned(),
        n.to_string(),
        prefix.to_string(),
        queue.to_owned(),
    );
    let out = tokio::task::spawn_blocking(move || {
        support::run_node_args(
            &["cluster-op.mjs", &op, &n],
            &[("NODES", &nodes), ("PREFIX", &prefix), ("QUEUE", &queue)],
        )
    })
    .await
    .unwrap();
    serde_json::from_str(out.trim()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_and_rust_share_a_tagged_queue_on_the_cluster_both_ways() {
    let prefix = tagged_prefix();
    let queue = Queue::try_new(q("interop"), backend(&prefix, "interop").await)
        .expect("the backend is bound to this queue");

    // Node.js adds, Rust works.
    let ids = node("add", 20, &prefix, "interop").await;
    let ids: Vec<String> = serde_json::from_value(ids).unwrap();
    assert_eq!(ids.len(), 20);
    let w = worker(&prefix, "interop", WorkerOptions::new().concurrency(5)).await;
    for id in &ids {
        let id = JobId::from(id.as_str());
        eventually("a Node.js job completes in Rust", LIMIT, || async {
            state(&queue, &id).await == Some(JobState::Completed)
        })
        .await;
        assert_eq!(processed_by(&queue, &id).await, json!("rust"));
    }
    w.close().await;

    // Rust adds, Node.js works.
    let mut added = Vec::new();
    for i in 0..20 {
        added.push(
            queue
                .add("from-rust", &json!({"i": i}), JobOptions::new())
                .await
                .unwrap()
                .id,
        );
    }
    let done = node("work", 20, &prefix, "interop").await;
    let done: BTreeSet<String> = serde_json::from_value(done).unwrap();
    let expected: BTreeSet<String> = added.iter().map(|id| id.as_str().to_owned()).collect();
    assert_eq!(done, expected);
    for id in &added {
        assert_eq!(processed_by(&queue, id).await, json!("node"));
    }
}
