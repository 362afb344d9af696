//! Redis Cluster faults (issue 16) while jobs flow, each on a private six-node cluster: a
//! manual failover (`CLUSTER FAILOVER` on the queue primary's replica) and a crash (SIGKILL)
//! of the queue's primary. A producer keeps adding (retrying an add that failed, under the
//! same job id), workers keep processing; afterwards every job added is completed, and the
//! jobs that ran more than once are counted and printed.

use crate::support;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, CancellationToken, JobId, JobOptions, JobState, Prefix, ProcessResult, Queue,
    QueueName, Worker, WorkerOptions,
};
use serde_json::json;
use support::redis_cluster::TestCluster;
use support::wait::eventually;

/// Jobs added in all.
const JOBS: usize = 400;
/// The fault strikes once this many have been added.
const FAULT_AT: usize = 150;
const LOCK: Duration = Duration::from_secs(2);

async fn backend(cluster: &TestCluster, prefix: &Prefix) -> RedisBackend {
    let options = RedisOptions::new(cluster.url())
        .prefix(prefix.clone())
        .response_timeout(Duration::from_secs(3));
    RedisBackend::connect(&options, QueueName::new("faults").unwrap())
        .await
        .unwrap()
}

/// How often each job ran.
type Runs = Arc<Mutex<HashMap<String, u32>>>;

async fn start_worker(
    cluster: &TestCluster,
    prefix: &Prefix,
    runs: &Runs,
) -> Worker<RedisBackend, impl bullmq::Processor<RedisBackend>> {
    let runs = Arc::clone(runs);
    let opts = WorkerOptions::new()
        .concurrency(10)
        .lock_duration(LOCK)
        .stalled_interval(Duration::from_millis(500))
        .max_stalled_count(100);
    Worker::new(
        QueueName::new("faults").unwrap(),
        backend(cluster, prefix).await,
        opts,
        move |job: ActiveJob<RedisBackend>, _: CancellationToken| {
            let runs = Arc::clone(&runs);
            async move {
                *runs
                    .lock()
                    .unwrap()
                    .entry(job.id.as_str().to_owned())
                    .or_default() += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
                ProcessResult::Ok(json!(null))
            }
        },
    )
    .await
    .unwrap()
}

/// Adds `JOBS` jobs with ids `job-<n>`, retrying each until it is in; runs `fault` once
/// `FAULT_AT` are in.
async fn produce(queue: &Queue<RedisBackend>, fault: impl FnOnce()) -> (Vec<JobId>, u32) {
    let mut fault = Some(fault);
    let mut ids = Vec::new();
    let mut failed_adds = 0;
    for n in 0..JOBS {
        if n == FAULT_AT
            && let Some(fault) = fault.take()
        {
            fault();
        }
        let opts = JobOptions::new().job_id(format!("job-{n}"));
        loop {
            match queue.add("j", &json!({"n": n}), opts.clone()).await {
                Ok(job) => {
                    ids.push(job.id);
                    break;
                }
                Err(e) => {
                    failed_adds += 1;
                    assert!(failed_adds < 2000, "adds keep failing: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    }
    (ids, failed_adds)
}

/// Runs jobs through a queue of a private cluster; `fault(cluster, queue's primary, queue's
/// slot)` strikes after `FAULT_AT` adds.
async fn run(fault_name: &str, fault: impl FnOnce(&TestCluster, u16, u16) + Send) {
    let cluster = TestCluster::start();
    let prefix = Prefix::new(format!("{{{}}}", support::unique_prefix())).unwrap();
    let primary = cluster.owner_of(&format!("{prefix}:faults:wait"));
    let queue = Queue::new(
        QueueName::new("faults").unwrap(),
        backend(&cluster, &prefix).await,
    );
    let runs: Runs = Arc::default();
    let workers = [
        start_worker(&cluster, &prefix, &runs).await,
        start_worker(&cluster, &prefix, &runs).await,
    ];
    let slot = cluster.slot_of(&format!("{prefix}:faults:wait"));
    let (ids, failed_adds) = produce(&queue, || fault(&cluster, primary, slot)).await;
    eventually(
        "the queue's slot is served by another primary",
        Duration::from_secs(30),
        || async { cluster.owner_of(&format!("{prefix}:faults:wait")) != primary },
    )
    .await;

    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let missing = loop {
        let mut missing = Vec::new();
        for id in &ids {
            let state = queue.job(id.clone()).get_state().await.ok().flatten();
            if state != Some(JobState::Completed) {
                missing.push((id.clone(), state));
            }
        }
        if missing.is_empty() || tokio::time::Instant::now() > deadline {
            break missing;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    for w in &workers {
        w.close().await;
    }
    let runs = runs.lock().unwrap();
    let mut reruns: Vec<(&String, &u32)> = runs.iter().filter(|(_, n)| **n > 1).collect();
    reruns.sort();
    println!(
        "{fault_name}: {} jobs added ({failed_adds} adds retried), {} never completed, {} ran \
         more than once: {reruns:?}",
        ids.len(),
        missing.len(),
        reruns.len()
    );
    assert!(missing.is_empty(), "jobs lost: {missing:?}");
    assert_eq!(ids.len(), JOBS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_migrated_while_jobs_flow_loses_no_job() {
    run(
        "slot migration (ASK, TRYAGAIN)",
        |cluster, primary, slot| {
            let to = cluster
                .primaries()
                .into_iter()
                .find(|p| *p != primary)
                .unwrap();
            let ports = cluster.ports.clone();
            // Migrates while the producer goes on adding.
            std::thread::spawn(move || {
                let moved = TestCluster::migrate_slot(&ports, slot, primary, to);
                println!("migrated slot {slot} ({moved} keys) from {primary} to {to}");
            });
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_failover_loses_no_job_and_workers_carry_on() {
    run("CLUSTER FAILOVER", |cluster, primary, _| {
        let replica = cluster.replica_of(primary);
        let reply = TestCluster::cli(replica, &["CLUSTER", "FAILOVER"]);
        assert!(reply.contains("OK"), "CLUSTER FAILOVER: {reply}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_primary_loses_no_job_and_workers_carry_on() {
    run("SIGKILL of the primary", |cluster, primary, _| {
        cluster.kill(primary);
    })
    .await;
}
