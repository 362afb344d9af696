//! R14 on Redis Cluster (issue 16): jobs added all along to three queues, one on each
//! primary of a private six-node cluster, while at random a replica takes over from its
//! primary (`CLUSTER FAILOVER`), a primary is killed with SIGKILL (its replica takes over,
//! the killed node comes back as that one's replica), or every client connection is cut
//! (`CLIENT KILL` on every node); then a quiet stretch. Every job whose add returned completes, the workers
//! still run, and a job runs again only during a fault or soon after it (re-runs counted and
//! printed).
//!
//! 40 s of faults by default; `BULLMQ_SOAK_SECS` runs it longer, `BULLMQ_SOAK_SEED` replays a
//! sequence of faults (the seed is printed).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bullmq::job::JobType;
use bullmq::{JobId, JobState, Prefix, Queue, QueueName, WorkerOptions};
use serde_json::json;
use support::chaos::{self, ChaosPlan, Produced, Producer};
use support::only_completed::assert_only_completed;
use support::redis_cluster::TestCluster;
use support::soak::{next_random, soak_settings};
use support::wait::eventually;

use crate::counting::{Runs, backend, counting_worker_taking, reruns};
use crate::support;

/// A fault the soak injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// `CLUSTER FAILOVER` on a primary's replica: a coordinated switch, no write lost.
    Failover,
    /// SIGKILL of a primary, once its replica holds every add acknowledged so far; the
    /// replica takes over, and the killed node is started again and rejoins as a replica.
    KillPrimary,
    /// `CLIENT KILL TYPE normal` on every node: every connection of producer and workers.
    KillClients,
}

const QUEUE: &str = "soak";
/// Workers on each queue.
const WORKERS_PER_QUEUE: usize = 2;
/// How long each job takes: long enough that every fault finds jobs in flight (about 30 at
/// the producer's pace, half of what the workers can run at once).
const WORK: Duration = Duration::from_millis(100);
/// Jobs each worker runs at once (`counting_worker`'s).
const CONCURRENCY: usize = 10;
/// A job stranded by a fault runs again once its lock (2 s) has run out and two stalled
/// checks (every 500 ms) have passed, or once a call cut by the fault has timed out (3 s),
/// plus slack for a loaded machine; counted from the end of the fault (the cluster healthy
/// again).
const RERUN_WINDOW: Duration = Duration::from_secs(10);

/// Runs `f` on the cluster off the runtime (`redis-cli` runs and blocking polls).
async fn on_cluster<T: Send + 'static>(
    cluster: &Arc<TestCluster>,
    f: impl FnOnce(&TestCluster) -> T + Send + 'static,
) -> T {
    let cluster = Arc::clone(cluster);
    tokio::task::spawn_blocking(move || f(&cluster))
        .await
        .unwrap()
}

/// Waits until the node on `port` reports itself a primary.
fn wait_primary(port: u16) {
    support::poll::poll_until(
        &format!("{port} did not take over"),
        Duration::from_secs(30),
        Duration::from_millis(100),
        || TestCluster::cli(port, &["ROLE"]).starts_with("master"),
    );
}

/// Strikes `fault` at the primary `pick` (modulo three) and returns once the cluster is
/// healthy again (every slot served, every primary with an up-to-date replica).
async fn strike(
    cluster: &Arc<TestCluster>,
    fault: Fault,
    pick: usize,
    gate: &tokio::sync::Mutex<()>,
) {
    match fault {
        Fault::Failover => {
            on_cluster(cluster, move |c| {
                let replica = c.replica_of(c.primaries()[pick % 3]);
                let reply = TestCluster::cli(replica, &["CLUSTER", "FAILOVER"]);
                assert!(reply.contains("OK"), "CLUSTER FAILOVER: {reply}");
                wait_primary(replica);
            })
            .await;
        }
        Fault::KillPrimary => {
            let (primary, replica) = on_cluster(cluster, move |c| {
                let primary = c.primaries()[pick % 3];
                (primary, c.replica_of(primary))
            })
            .await;
            let (mut to_primary, to_replica) = (
                TestCluster::node(primary).await,
                TestCluster::node(replica).await,
            );
            // Asynchronous replication loses what the replica has not received yet (a server
            // limit, see the README); the soak checks that no acknowledged add is lost, so it
            // kills once the adds acknowledged so far are on the replica. It holds the adds
            // back for those few milliseconds only: the workers' writes go on, and jobs are in
            // flight when the primary dies.
            let held = gate.lock().await;
            TestCluster::wait_replicated(&mut to_primary, &to_replica).await;
            cluster.kill(primary);
            drop(held);
            on_cluster(cluster, move |c| {
                wait_primary(replica);
                c.restart(primary);
            })
            .await;
        }
        Fault::KillClients => {
            on_cluster(cluster, TestCluster::kill_clients).await;
        }
    }
    on_cluster(cluster, TestCluster::wait_healthy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r14_chaos_soak_on_a_cluster_completes_every_job() {
    let (soak, seed) = soak_settings(40);
    eprintln!("r14 cluster: seed {seed} (BULLMQ_SOAK_SEED), faults for {soak:?}");
    let cluster = Arc::new(on_cluster_start().await);
    let url = cluster.url();
    let tags = on_cluster(&cluster, TestCluster::tags_on_every_primary).await;
    let prefixes: Vec<Prefix> = tags
        .iter()
        .map(|(tag, _)| Prefix::new(format!("{{{tag}}}")).unwrap())
        .collect();
    let runs: Runs = Arc::default();
    let mut workers = Vec::new();
    // The producer's queues, and the test's own to check them at the end.
    let (mut producing, mut queues) = (Vec::new(), Vec::new());
    for prefix in &prefixes {
        for _ in 0..WORKERS_PER_QUEUE {
            // Back soon after a lost connection (Node's default waits 15 s), as in R14.
            let opts = WorkerOptions::new().run_retry_delay(Duration::from_millis(200));
            workers.push(counting_worker_taking(&url, prefix, QUEUE, &runs, WORK, opts).await);
        }
        for queues in [&mut producing, &mut queues] {
            queues.push(
                Queue::try_new(
                    QueueName::new(QUEUE).unwrap(),
                    backend(&url, prefix, QUEUE).await,
                )
                .expect("the backend is bound to this queue"),
            );
        }
    }
    let gate = Arc::new(tokio::sync::Mutex::new(()));
    let stop = Arc::new(AtomicBool::new(false));
    // Batches of 10 (`s<n>`, ids unique over the queues) to each queue in turn; `gate` is
    // held for each try, so a primary is killed only once its replica holds every add
    // acknowledged so far.
    let producer = Producer {
        ids: "s",
        data: json!({}),
        pace: Duration::from_millis(100),
        retry: Duration::from_millis(50),
    };
    let producer = tokio::spawn(producer.run(producing, Arc::clone(&gate), Arc::clone(&stop)));

    let plan = ChaosPlan {
        pause: (500, 1500),
        ..ChaosPlan::new(soak, seed, RERUN_WINDOW)
    };
    let started = Instant::now();
    let kinds = [
        (Fault::Failover, "failovers"),
        (Fault::KillPrimary, "primaries killed"),
        (Fault::KillClients, "client kills"),
    ];
    let faults = plan
        .run(&kinds, async |fault, rng| {
            let pick = usize::try_from(next_random(rng) % 3).unwrap();
            let at = Instant::now();
            strike(&cluster, fault, pick, &gate).await;
            eprintln!(
                "r14 cluster: {fault:?} at {:.1?}, healthy after {:.1?}",
                at.duration_since(started),
                at.elapsed()
            );
        })
        .await;
    stop.store(true, Ordering::SeqCst);
    let Produced { ids, refused } = producer.await.unwrap();
    let added: usize = ids.iter().map(Vec::len).sum();

    let completed = [JobType::State(JobState::Completed)];
    for (queue, ids) in queues.iter().zip(&ids) {
        let expected = u64::try_from(ids.len()).unwrap();
        eventually(
            "every added job completed",
            Duration::from_secs(120),
            || async {
                queue.get_job_counts(&completed).await.ok().map(|c| c[0].1) == Some(expected)
            },
        )
        .await;
        assert_only_completed(queue, ids.len()).await;
        for id in ids {
            let state = queue
                .job(JobId::from(id.as_str()))
                .get_state()
                .await
                .unwrap();
            assert_eq!(state, Some(JobState::Completed), "job {id}");
        }
    }
    for w in &workers {
        assert!(w.is_running(), "a worker stopped");
    }
    for w in &workers {
        w.close().await;
    }

    // Each re-run is put down to the latest fault that started before it: (re-runs, the
    // latest after the fault started, the latest after it was over).
    let mut per_fault = vec![(0_usize, Duration::ZERO, Duration::ZERO); faults.len()];
    for (id, times) in runs.lock().unwrap().iter_mut() {
        times.sort();
        for &at in &times[1..] {
            let fault = faults.iter().rposition(|f| f.at <= at);
            let explained = fault.filter(|&i| at <= faults[i].over + RERUN_WINDOW);
            assert!(
                explained.is_some(),
                "job {id} ran again {:?} after the fault before it was over ({:?}), with no \
                 fault to explain it",
                fault.map(|i| at.saturating_duration_since(faults[i].over)),
                fault.map(|i| faults[i].fault),
            );
            if let Some(i) = explained {
                let entry = &mut per_fault[i];
                entry.0 += 1;
                entry.1 = entry.1.max(at.duration_since(faults[i].at));
                entry.2 = entry.2.max(at.saturating_duration_since(faults[i].over));
            }
        }
    }
    for (f, (n, since_start, since_end)) in faults.iter().zip(&per_fault) {
        if *n > 0 {
            eprintln!(
                "r14 cluster: {:?} at {:.1?} (over after {:.1?}): {n} re-runs, the last \
                 {since_start:.1?} after it struck, {since_end:.1?} after it was over",
                f.fault,
                f.at.duration_since(started),
                f.over.duration_since(f.at),
            );
        }
    }
    let again = reruns(&runs);
    let reran: usize = again.iter().map(|(_, n)| n - 1).sum();
    let tally = chaos::tally(&faults, &kinds);
    eprintln!(
        "r14 cluster: {added} jobs on 3 primaries ({refused} adds retried), {tally}, {reran} re-runs \
         of {} jobs",
        again.len(),
    );
    chaos::assert_bounds(reran, faults.len(), workers.len(), CONCURRENCY, added, 300);
}

/// A private cluster, started off the runtime.
async fn on_cluster_start() -> TestCluster {
    tokio::task::spawn_blocking(TestCluster::start)
        .await
        .unwrap()
}
