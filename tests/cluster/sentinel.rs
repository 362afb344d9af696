//! Redis Sentinel (issue 16), on private servers: a primary, its replica and three sentinels
//! on free loopback ports. While a producer adds, two workers process and a `QueueEvents`
//! reads, the primary is switched (`SENTINEL FAILOVER`) or killed (SIGKILL): every job that
//! exists completes, the reader keeps reading, and the adds lost, the jobs that ran twice and
//! the completions the reader never saw are counted and printed. A planned failover loses no
//! add when the data nodes refuse writes that no replica follows (`min-replicas-to-write 1`)
//! and the clients have their writes confirmed by the replica (`WAIT 1`); without either, the
//! writes the old primary took between the replica's promotion and the clients hearing of it
//! are lost, and the test measures how many. After a client heard of the switch, the old
//! primary runs none of its calls (checked on the old primary's `MONITOR`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use bullmq::redis::RedisBackend;
use bullmq::{
    EventItem, JobState, Prefix, Queue, QueueEvent, QueueEvents, QueueEventsOptions, QueueName,
};
use bullmq_redis::__private::switches_heard;
use support::wait::eventually;

use crate::counting::{Produced, Runs, backend_waiting, counting_worker_on, produce_timed, reruns};
use crate::sentinels::{MASTER, Sentinels, cli};
use crate::support;
use crate::witness::{Monitor, millis_between, promoted_at};

/// What a failover run saw.
struct Outcome {
    /// Adds acknowledged whose job does not exist afterwards.
    lost_adds: usize,
    /// Jobs that ran more than once (a finish lost, or a lock lost in the fault).
    reruns: usize,
}

/// The fault a run strikes, once `FAULT_AT` jobs were added.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// `SENTINEL FAILOVER`: the old primary lives on and is demoted later.
    Planned,
    /// SIGKILL of the primary.
    Killed,
}

/// How long after the last client heard of the switch a call it had already written may
/// still run on the old primary (sent before it heard, run after): a starved server on this
/// loaded machine may run it late, but the client gives up on it after its response timeout
/// (3 s, `backend_waiting`). With the switch ignored, calls run there 10 s later.
const IN_FLIGHT_GRACE: Duration = Duration::from_secs(3);

/// The pause between two adds after the fault: the 250 adds then span about 2.5 s, through
/// the promotion and the clients hearing of it (about 1 s later).
const PACE: Duration = Duration::from_millis(10);

async fn run(name: &str, fault: Fault, guarded: bool) -> Outcome {
    let sentinels = Sentinels::start_guarded(guarded);
    let url = sentinels.url();
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    // Guarded on the client's side too: `min-replicas-to-write` refuses what the old primary
    // would take after the promotion, but a write it acknowledged just before (sent to the
    // replica, not yet read by it) is still lost; `WAIT` returns only what the replica has.
    let backends = [
        backend_waiting(&url, &prefix, "failover", guarded).await,
        backend_waiting(&url, &prefix, "failover", guarded).await,
        backend_waiting(&url, &prefix, "failover", guarded).await,
        backend_waiting(&url, &prefix, "failover", guarded).await,
    ];
    let queue = Queue::try_new(QueueName::new("failover").unwrap(), backends[0].clone())
        .expect("the backend is bound to this queue");
    let events = QueueEvents::new(backends[1].clone(), QueueEventsOptions::new()).unwrap();
    events.wait_until_ready().await.unwrap();
    let completed_seen: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut sub = events.subscribe();
    let seen = Arc::clone(&completed_seen);
    let reading = tokio::spawn(async move {
        while let Some(item) = sub.recv().await {
            if let EventItem::Event(e) = item
                && let QueueEvent::Completed { job_id, .. } = &e.event
            {
                seen.lock().unwrap().insert(job_id.as_str().to_owned());
            }
        }
    });
    let runs: Runs = Arc::default();
    let workers = [
        counting_worker_on(backends[2].clone(), "failover", &runs).await,
        counting_worker_on(backends[3].clone(), "failover", &runs).await,
    ];

    let old = sentinels.primary;
    let monitor = (fault == Fault::Planned).then(|| Monitor::start(old));
    let mut promoted = None;
    let mut struck_at = None;
    let Produced {
        ids,
        acked_at,
        failed_adds,
        errors,
    } = produce_timed(
        &queue,
        || {
            struck_at = Some(SystemTime::now());
            promoted = Some(promoted_at(sentinels.replica));
            match fault {
                Fault::Planned => {
                    let reply = cli(sentinels.sentinels[0], &["SENTINEL", "FAILOVER", MASTER]);
                    assert!(reply.contains("OK"), "SENTINEL FAILOVER: {reply}");
                }
                Fault::Killed => {
                    // What asynchronous replication loses in a crash is the server's (README,
                    // "What a failover costs"); the kill comes once the replica has it all.
                    sentinels.wait_replica_caught_up();
                    sentinels.kill(old);
                }
            }
        },
        PACE,
    )
    .await;
    eventually(
        "the sentinels name another primary",
        Duration::from_secs(30),
        || async {
            let now = sentinels.named_primary();
            now != 0 && now != old
        },
    )
    .await;
    assert_eq!(sentinels.named_primary(), sentinels.replica);
    let promoted = promoted.unwrap().join().unwrap();
    if monitor.is_some() {
        // The sentinels demote the old primary (and drop its clients, `MONITOR` included)
        // some seconds after the switch: only then is what it took overwritten.
        eventually(
            "the old primary follows the new one",
            Duration::from_secs(60),
            || async { cli(old, &["ROLE"]).starts_with("slave") },
        )
        .await;
    }

    // Every job that exists completes; an add the old primary took and the new one never
    // saw is gone for good once the old primary follows the new one.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let (lost, missing) = loop {
        let (mut lost, mut missing) = (Vec::new(), Vec::new());
        for (n, id) in ids.iter().enumerate() {
            match queue.job(id.clone()).get_state().await {
                Ok(Some(JobState::Completed)) => {}
                Ok(None) => lost.push(n),
                other => missing.push((id.clone(), other.ok().flatten())),
            }
        }
        if missing.is_empty() || tokio::time::Instant::now() > deadline {
            break (lost, missing);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // The reader carries on past the switch: it sees the completion of the last job.
    let last = (0..ids.len())
        .rev()
        .find(|n| !lost.contains(n))
        .map(|n| ids[n].as_str().to_owned())
        .unwrap();
    eventually(
        "the reader sees the last job complete",
        Duration::from_secs(30),
        || async { completed_seen.lock().unwrap().contains(&last) },
    )
    .await;
    for w in &workers {
        w.close().await;
    }
    events.close().await;
    reading.abort();

    // When each client heard of the switch (or, had it been resubscribing then, gave up on the
    // old primary all the same); the latest bounds what may still reach the old primary.
    let struck_at = struck_at.unwrap();
    let heard: Vec<SystemTime> = backends
        .iter()
        .map(|b: &RedisBackend| {
            switches_heard(b)
                .into_iter()
                .find(|t| *t >= struck_at)
                .unwrap_or_else(|| panic!("a client never heard of the switch"))
        })
        .collect();
    let first_heard = heard.iter().min().copied().unwrap();
    let last_heard = heard.iter().max().copied().unwrap();
    let reruns = reruns(&runs);
    let seen = completed_seen.lock().unwrap();
    let unseen = ids.iter().filter(|id| !seen.contains(id.as_str())).count();
    let lost_acks: Vec<(i64, i64)> = lost
        .iter()
        .map(|n| {
            (
                millis_between(acked_at[*n], promoted),
                millis_between(acked_at[*n], first_heard),
            )
        })
        .collect();
    println!("{name}: the adds' errors: {errors:?}");
    if guarded {
        // Refusals are retried within the response timeout; what reaches the caller is an
        // add the replica did not confirm, a timeout, or a refusal retried that long.
        assert!(
            errors.other.is_empty(),
            "adds failed with errors bullmq should have retried ([error, time taken]): {:?}",
            errors.other
        );
    }
    println!(
        "{name}: {} jobs added ({failed_adds} adds retried), {} adds lost (acknowledged at \
         [ms after the promotion, ms after the first client heard of it]: {lost_acks:?}), \
         {} never completed, {} ran more than once {reruns:?}, {unseen} completions the \
         reader never saw; clients heard of the switch {}..{} ms after the promotion",
        ids.len(),
        lost.len(),
        missing.len(),
        reruns.len(),
        millis_between(first_heard, promoted),
        millis_between(last_heard, promoted),
    );
    let between = acked_at
        .iter()
        .filter(|t| **t >= promoted && **t < first_heard)
        .count();
    let longest_pause = acked_at
        .windows(2)
        .map(|w| millis_between(w[1], w[0]))
        .max()
        .unwrap_or(0);
    println!(
        "{name}: {between} adds acknowledged between the promotion and the first client \
         hearing of it; the longest pause between two adds {longest_pause} ms"
    );
    assert!(missing.is_empty(), "jobs never completed: {missing:?}");
    if let Some(monitor) = monitor {
        let ran = monitor.finish();
        let late: Vec<(&str, i64)> = ran
            .iter()
            .filter(|r| r.at > last_heard + IN_FLIGHT_GRACE)
            .map(|r| (r.command.as_str(), millis_between(r.at, last_heard)))
            .collect();
        let latest = ran.iter().map(|r| millis_between(r.at, last_heard)).max();
        println!(
            "{name}: the old primary ran {} data calls, the last {latest:?} ms after the last \
             client heard of the switch",
            ran.len()
        );
        assert!(
            late.is_empty(),
            "the old primary ran calls after the clients heard of the switch ([command, ms after]): \
             {late:?}"
        );
    }
    Outcome {
        lost_adds: lost.len(),
        reruns: reruns.len(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_loses_no_job_and_everyone_carries_on() {
    let outcome = run(
        "SENTINEL FAILOVER, min-replicas-to-write 1 and WAIT 1",
        Fault::Planned,
        true,
    )
    .await;
    assert_eq!(outcome.lost_adds, 0, "adds lost");
}

/// Without `min-replicas-to-write`, the old primary takes writes until the clients hear of
/// the switch, and those are lost: measured and printed, not asserted (everything else is).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unguarded_sentinel_failover_loses_only_what_the_old_primary_took() {
    let outcome = run("SENTINEL FAILOVER, unguarded", Fault::Planned, false).await;
    println!(
        "unguarded: {} adds lost, {} jobs ran again",
        outcome.lost_adds, outcome.reruns
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_primary_is_replaced_and_everyone_carries_on() {
    let outcome = run("SIGKILL of the primary", Fault::Killed, false).await;
    assert_eq!(outcome.lost_adds, 0, "adds lost");
}
