//! Redis Cluster faults (issue 16) while jobs flow, each on a private six-node cluster: a
//! manual failover (`CLUSTER FAILOVER` on the queue primary's replica) and a crash (SIGKILL)
//! of the queue's primary. A producer keeps adding (retrying an add that failed, under the
//! same job id), workers keep processing; afterwards every job added is completed, and the
//! jobs that ran more than once are counted and printed.

use std::sync::Arc;
use std::time::Duration;

use bullmq::{JobState, Prefix, Queue, QueueName};
use support::redis_cluster::TestCluster;
use support::wait::eventually;

use crate::counting::{JOBS, Runs, backend, counting_worker, produce, reruns};
use crate::support;

/// Runs jobs through a queue of a private cluster; `fault(cluster, queue's primary, queue's
/// slot)` strikes after `FAULT_AT` adds.
async fn run(fault_name: &str, fault: impl FnOnce(&TestCluster, u16, u16) + Send) {
    // A primary silent for 3 s is failed over: long enough that a node starved of CPU on a
    // loaded machine is not failed over by mistake before the fault.
    let cluster = TestCluster::start_with_node_timeout(3_000);
    let prefix = Prefix::new(format!("{{{}}}", support::unique_prefix())).unwrap();
    let primary = cluster.owner_of(&format!("{prefix}:faults:wait"));
    let queue = Queue::try_new(
        QueueName::new("faults").unwrap(),
        backend(&cluster.url(), &prefix, "faults").await,
    )
    .expect("the backend is bound to this queue");
    let runs: Runs = Arc::default();
    let workers = [
        counting_worker(&cluster.url(), &prefix, "faults", &runs).await,
        counting_worker(&cluster.url(), &prefix, "faults", &runs).await,
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
    let reruns = reruns(&runs);
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
        // What asynchronous replication loses in a crash is not the client's to keep (README,
        // "What a failover costs"): the kill comes once the replica has what was written.
        cluster.wait_replica_caught_up(primary);
        cluster.kill(primary);
    })
    .await;
}
