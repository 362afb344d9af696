//! A fleet being upgraded: Node.js BullMQ 6.7.0 services (the previous release, from
//! `tests/node-6.7.0`, script `fleet.mjs`) and this crate (on the 6.7.6 pin) share queues, on
//! Redis and on PostgreSQL. A 6.7.0 producer and this crate's producer add jobs and flows; a
//! 6.7.0 worker and ours process them side by side: every job runs once, leaves the result and
//! job fields its processor gave it, and flows whose parent and children run on different
//! versions complete with their children's values. Needs `npm ci --prefix tests/node-6.7.0`.
//!
//! Queues: `s` is worked by both runtimes, `n` by the 6.7.0 workers only, `r` by ours only, so
//! a parent in one of `n`/`r` with children in the other is finished across the versions
//! (the child's `moveToFinished` of one version releases the parent for the other).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::backend::Lifecycle;
use bullmq::flow::{FlowJob, FlowProducer};
use bullmq::job::JobType;
use bullmq::postgres::PostgresBackend;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, AnyBackend, BulkJob, JobId, JobOptions, JobState, KeepJobs, Prefix, Queue,
    QueueName, Worker, WorkerOptions,
};
use serde_json::{Value, json};

use crate::support::postgres::SchemaGuard;
use crate::support::wait::eventually;

/// How long the fleet may take to settle.
const WAIT: Duration = Duration::from_secs(60);

/// Our workers' name, and what our processor returns as `by`.
const RUST: &str = "rust-6.7.6";
/// The 6.7.0 workers' name (`fleet.mjs`), and what their processor returns as `by`.
const NODE: &str = "node-6.7.0";

/// Plain jobs each producer adds to `s`.
const PLAIN: usize = 150;

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

/// One store the fleet shares: a Redis prefix or a PostgreSQL schema.
enum Store {
    Redis {
        prefix: String,
        /// Deletes the prefix's keys when the test ends.
        _guard: support::PrefixGuard,
    },
    Postgres(SchemaGuard),
}

impl Store {
    fn redis() -> Self {
        let prefix = support::unique_prefix();

        Self::Redis {
            prefix: prefix.clone(),
            _guard: support::PrefixGuard(prefix),
        }
    }

    fn postgres() -> Self {
        Self::Postgres(SchemaGuard::new("fleet").kept_if("PGI_KEEP"))
    }

    async fn backend(&self, queue: &str) -> AnyBackend {
        match self {
            Self::Redis { prefix, .. } => {
                let options =
                    RedisOptions::new(support::redis_url()).prefix(Prefix::new(prefix).unwrap());
                RedisBackend::connect(&options, q(queue))
                    .await
                    .unwrap()
                    .into()
            }
            Self::Postgres(schema) => {
                let backend: PostgresBackend = schema.backend(queue).await;
                backend.into()
            }
        }
    }

    async fn queue(&self, queue: &str) -> Queue<AnyBackend> {
        Queue::try_new(q(queue), self.backend(queue).await)
            .expect("the backend is bound to this queue")
    }

    /// `fleet.mjs`'s environment for this store.
    fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::Redis { prefix, .. } => {
                vec![("BACKEND", "redis".into()), ("PREFIX", prefix.clone())]
            }
            Self::Postgres(schema) => vec![
                ("BACKEND", "postgres".into()),
                ("DATABASE_URL", support::database_url()),
                ("SCHEMA", schema.as_str().to_owned()),
            ],
        }
    }
}

/// Runs `node fleet.mjs <args…>` with the 6.7.0 package, off the async threads; its JSON.
async fn node(store: &Store, args: &[&str]) -> tokio::task::JoinHandle<Value> {
    let args: Vec<String> = std::iter::once("fleet.mjs")
        .chain(args.iter().copied())
        .map(str::to_owned)
        .collect();
    let env = store.env();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        support::run_node_json_in(&support::previous_node_dir(), &args, &env)
    })
}

/// `(queue, job id)`, as both runtimes record what they ran.
type Ran = Arc<Mutex<Vec<(String, String)>>>;

/// Our worker on `queue`: a `parent` returns its children's values, any other job its `i`
/// (after a little work, so that both runtimes take part in `s`).
async fn rust_worker(
    store: &Store,
    queue: &'static str,
    ran: Ran,
) -> Worker<AnyBackend, impl bullmq::Processor<AnyBackend>> {
    Worker::new(
        q(queue),
        store.backend(queue).await,
        WorkerOptions::new()
            .name(RUST)
            .concurrency(4)
            .drain_delay(Duration::from_millis(500)),
        move |job: ActiveJob<AnyBackend>, _| {
            let ran = Arc::clone(&ran);
            async move {
                ran.lock()
                    .unwrap()
                    .push((queue.to_owned(), job.id.to_string()));
                if job.name == "parent" {
                    let children = job.get_children_values().await?;
                    return Ok(json!({"by": RUST, "children": children}));
                }
                // Simulates work, so that the other runtime's workers get their share.
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok(json!({"by": RUST, "i": job.data_as::<Value>()?["i"]}))
            }
        },
    )
    .await
    .unwrap()
}

/// A flow node for `fleet.mjs` (`FlowProducer#add`'s JSON).
fn node_flow(queue: &str, id: &str, children: &[Child]) -> Value {
    let children: Vec<Value> = children
        .iter()
        .map(|child| {
            let mut opts = json!({"jobId": child.id});
            if child.removed {
                opts["removeOnComplete"] = json!(true);
            }
            json!({"queueName": child.queue, "name": "child", "data": {"i": child.i}, "opts": opts})
        })
        .collect();
    json!({"queueName": queue, "name": "parent", "data": {}, "opts": {"jobId": id},
           "children": children})
}

/// The same flow for our `FlowProducer`.
fn rust_flow(queue: &str, id: &str, children: &[Child]) -> FlowJob {
    let children = children.iter().map(|child| {
        let mut opts = JobOptions::new().job_id(child.id);
        if child.removed {
            opts = opts.remove_on_complete(KeepJobs::RemoveAll);
        }
        FlowJob::new(q(child.queue), "child", json!({ "i": child.i })).opts(opts)
    });
    FlowJob::new(q(queue), "parent", json!({}))
        .opts(JobOptions::new().job_id(id))
        .children(children)
}

/// The flows: `(added by Node?, parent queue, parent id, children)`, the children written
/// `queue:id`, with `!` after those removed on completion (see [`children`]). Parents in
/// `n`/`r` have children in the other queue (or both). No id is a queue key's name (`pc`,
/// `id`, `meta`, …), which a job id shares the key space with.
const FLOWS: [(bool, &str, &str, &str); 5] = [
    (true, "r", "parent-a", "n:a1 n:a2 n:a3"),
    (true, "n", "parent-b", "r:b1 r:b2 r:b3!"),
    (true, "s", "parent-c", "s:c1 s:c2 s:c3 s:c4"),
    (false, "n", "parent-d", "r:d1 r:d2 n:d3!"),
    (false, "r", "parent-e", "n:e1 n:e2!"),
];

/// A child of one of [`FLOWS`]: its data is `{"i": i}`, its place among its siblings from 1.
struct Child {
    queue: &'static str,
    id: &'static str,
    i: usize,
    removed: bool,
}

/// The children a [`FLOWS`] entry writes as `spec`.
fn children(spec: &'static str) -> Vec<Child> {
    spec.split(' ')
        .enumerate()
        .map(|(n, child)| {
            let (child, removed) = child
                .strip_suffix('!')
                .map_or((child, false), |kept| (kept, true));
            let (queue, id) = child.split_once(':').expect("a child is queue:id");
            Child {
                queue,
                id,
                i: n + 1,
                removed,
            }
        })
        .collect()
}

/// Who must run a job of `queue` (`None`: either).
fn runner_of(queue: &str) -> Option<&'static str> {
    match queue {
        "n" => Some(NODE),
        "r" => Some(RUST),
        _ => None,
    }
}

async fn fleet_shares_the_queues(store: Store) {
    let queues: BTreeMap<&str, Queue<AnyBackend>> = [
        ("s", store.queue("s").await),
        ("n", store.queue("n").await),
        ("r", store.queue("r").await),
    ]
    .into_iter()
    .collect();

    // The 6.7.0 workers first, then ours; the jobs go in once both run.
    let dir = tempfile_dir();
    let (ready, stop) = (dir.join("ready"), dir.join("stop"));
    let node_workers = node(
        &store,
        &[
            "work",
            "s,n",
            ready.to_str().unwrap(),
            stop.to_str().unwrap(),
        ],
    )
    .await;
    eventually("the 6.7.0 workers", WAIT, || async { ready.exists() }).await;
    let ran: Ran = Arc::default();
    let ours = [
        rust_worker(&store, "s", Arc::clone(&ran)).await,
        rust_worker(&store, "r", Arc::clone(&ran)).await,
    ];

    // Producers of both versions: plain jobs in `s` (some delayed, some prioritized), flows.
    let node_jobs: Vec<Value> = (0..PLAIN)
        .map(|i| {
            let opts = match i % 10 {
                0 => json!({"delay": 200}),
                5 => json!({"priority": 2}),
                _ => json!({}),
            };
            json!({"queue": "s", "name": "plain", "data": {"i": i}, "opts": opts})
        })
        .collect();
    let added = node(&store, &["add", &Value::from(node_jobs).to_string()])
        .await
        .await
        .unwrap();
    assert_eq!(added.as_array().unwrap().len(), PLAIN);
    queues["s"]
        .add_bulk(
            (0..PLAIN)
                .map(|i| BulkJob {
                    name: "plain".to_owned(),
                    data: json!({ "i": 1_000 + i }),
                    opts: if i % 10 == 0 {
                        JobOptions::new().delay(Duration::from_millis(200))
                    } else {
                        JobOptions::new()
                    },
                })
                .collect(),
        )
        .await
        .unwrap();
    let producer = FlowProducer::new(store.backend("s").await);
    for (by_node, queue, id, spec) in FLOWS {
        if by_node {
            let tree = node_flow(queue, id, &children(spec));
            let ids = node(&store, &["flow", &tree.to_string()])
                .await
                .await
                .unwrap();
            assert_eq!(ids["id"], id);
        } else {
            producer
                .add(rust_flow(queue, id, &children(spec)))
                .await
                .unwrap();
        }
    }

    // Every job finishes: the completed counts, removed children aside.
    let mut expected: BTreeMap<&str, u64> = [("s", 2 * PLAIN as u64), ("n", 0), ("r", 0)]
        .into_iter()
        .collect();
    for (_, queue, _, spec) in FLOWS {
        *expected.get_mut(queue).unwrap() += 1;
        for child in children(spec).iter().filter(|child| !child.removed) {
            *expected.get_mut(child.queue).unwrap() += 1;
        }
    }
    let completed = JobType::State(JobState::Completed);
    eventually("every job completed", WAIT, || async {
        for (name, queue) in &queues {
            let done = queue.get_job_count_by_types(&[completed]).await.unwrap();
            if done != expected[name] || queue.count().await.unwrap() != 0 {
                return false;
            }
        }
        true
    })
    .await;
    std::fs::write(&stop, "stop\n").unwrap();
    let node_out = node_workers.await.unwrap();
    for worker in ours {
        worker.close().await;
    }
    assert_eq!(node_out["version"], "6.7.0", "the previous release ran");

    // Each job ran once, on the runtime its queue allows, and both took part in `s`.
    let node_ran: Vec<(String, String)> =
        serde_json::from_value(node_out["processed"].clone()).expect("[[queue, id], …]");
    let rust_ran = ran.lock().unwrap().clone();
    let mut by_job: BTreeMap<(String, String), &str> = BTreeMap::new();
    for (who, list) in [(NODE, &node_ran), (RUST, &rust_ran)] {
        for job in list {
            assert!(
                by_job.insert(job.clone(), who).is_none(),
                "{job:?} ran twice"
            );
            if let Some(only) = runner_of(&job.0) {
                assert_eq!(who, only, "{job:?} ran on the wrong runtime");
            }
        }
    }
    let removed_count = u64::try_from(removed_children().count()).unwrap();
    let total: u64 = expected.values().sum::<u64>() + removed_count;
    assert_eq!(u64::try_from(by_job.len()).unwrap(), total, "every job ran");
    for who in [NODE, RUST] {
        assert!(
            by_job
                .iter()
                .any(|((queue, _), by)| queue == "s" && *by == who),
            "{who} took part in `s`"
        );
    }

    // What each job holds: the result its runner gave it, one attempt, no failure.
    let mut results: BTreeMap<(String, String), Value> = BTreeMap::new();
    for ((queue, id), who) in &by_job {
        let Some(job) = queues[queue.as_str()]
            .get_job(&JobId::from(id.as_str()))
            .await
            .unwrap()
        else {
            // A child removed on completion.
            results.insert((queue.clone(), id.clone()), Value::Null);
            continue;
        };
        let value: Value = serde_json::from_str(job.return_value.as_deref().unwrap()).unwrap();
        assert_eq!(value["by"], *who, "{queue}:{id}");
        if job.name != "parent" {
            let data: Value = serde_json::from_str(&job.data).unwrap();
            assert_eq!(value["i"], data["i"], "{queue}:{id} ran with its own data");
        }
        assert_eq!(
            (job.attempts_made, job.attempts_started),
            (1, 1),
            "{queue}:{id}"
        );
        assert_eq!(job.processed_by.as_deref(), Some(*who), "{queue}:{id}");
        assert!(job.failed_reason.is_none(), "{queue}:{id}");
        assert!(
            job.processed_on.is_some() && job.finished_on >= job.processed_on,
            "{queue}:{id}"
        );
        results.insert((queue.clone(), id.clone()), value);
    }

    // Each parent got every child's value, keyed by the child's key, from either version.
    for (_, queue, id, spec) in FLOWS {
        let parent = &results[&(queue.to_owned(), id.to_owned())];
        let mut want = serde_json::Map::new();
        for child in children(spec) {
            let who = runner_of(child.queue).map_or_else(
                || results[&(child.queue.to_owned(), child.id.to_owned())]["by"].clone(),
                |who| json!(who),
            );
            let key = queues[child.queue].backend().to_key(child.id);
            want.insert(key, json!({"by": who, "i": child.i}));
        }
        assert_eq!(parent["children"], Value::Object(want), "parent {id}");
    }
    let removed: BTreeSet<&str> = removed_children().map(|child| child.id).collect();
    for ((_, id), value) in &results {
        assert_eq!(value.is_null(), removed.contains(id.as_str()), "job {id}");
    }

    // And 6.7.0 reads the queues as we do: all completed, nothing left anywhere else.
    let counts = node(&store, &["counts", "s,n,r"]).await.await.unwrap();
    for (name, done) in &expected {
        assert_eq!(
            counts[name],
            json!({"waiting": 0, "active": 0, "delayed": 0, "prioritized": 0,
                   "completed": done, "failed": 0, "waiting-children": 0}),
            "6.7.0's counts of {name}"
        );
    }
}

/// The children removed on completion.
fn removed_children() -> impl Iterator<Item = Child> {
    FLOWS
        .iter()
        .flat_map(|(_, _, _, spec)| children(spec))
        .filter(|child| child.removed)
}

/// A fresh folder for the ready and stop files.
fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(support::unique_name("bullmq-fleet"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_6_7_0_fleet_and_ours_share_redis_queues() {
    fleet_shares_the_queues(Store::redis()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_6_7_0_fleet_and_ours_share_postgres_queues() {
    fleet_shares_the_queues(Store::postgres()).await;
}
