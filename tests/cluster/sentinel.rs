//! Redis Sentinel (issue 16), on private servers: a primary, its replica and three sentinels
//! on free loopback ports. While a producer adds, two workers process and a `QueueEvents`
//! reads, the primary is switched (`SENTINEL FAILOVER`) or killed (SIGKILL): every job added
//! completes, the reader keeps reading, and the jobs that ran twice and the completions the
//! reader never saw are counted and printed (asynchronous replication may lose the last
//! writes before a crash).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::{
    EventItem, JobState, Prefix, Queue, QueueEvent, QueueEvents, QueueEventsOptions, QueueName,
};
use support::wait::eventually;

use crate::counting::{Runs, backend, counting_worker, produce};
use crate::sentinels::{MASTER, Sentinels, cli};
use crate::support;

async fn run(fault_name: &str, fault: impl FnOnce(&Sentinels)) {
    let sentinels = Sentinels::start();
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    let queue = Queue::new(
        QueueName::new("failover").unwrap(),
        backend(&sentinels.url(), &prefix, "failover").await,
    );
    let events = QueueEvents::new(
        backend(&sentinels.url(), &prefix, "failover").await,
        QueueEventsOptions::new(),
    )
    .unwrap();
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
        counting_worker(&sentinels.url(), &prefix, "failover", &runs).await,
        counting_worker(&sentinels.url(), &prefix, "failover", &runs).await,
    ];

    let (ids, failed_adds) = produce(&queue, || fault(&sentinels)).await;
    let old = sentinels.primary;
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
    // The reader carries on past the switch: it sees the completion of the last job.
    let last = ids.last().unwrap().as_str().to_owned();
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
    let runs = runs.lock().unwrap();
    let mut reruns: Vec<(&String, &u32)> = runs.iter().filter(|(_, n)| **n > 1).collect();
    reruns.sort();
    let seen = completed_seen.lock().unwrap();
    let unseen = ids.iter().filter(|id| !seen.contains(id.as_str())).count();
    println!(
        "{fault_name}: {} jobs added ({failed_adds} adds retried), {} never completed, {} ran \
         more than once {reruns:?}, {unseen} completions the reader never saw",
        ids.len(),
        missing.len(),
        reruns.len()
    );
    assert!(missing.is_empty(), "jobs lost: {missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "issue 16, open: run beside the SIGKILL test on a loaded machine, the producer \
            sometimes keeps writing to the old primary after the switch and those adds are lost \
            (about 1 run in 2 here); alone it passes. Run with `-- --ignored`"]
async fn a_sentinel_failover_loses_no_job_and_everyone_carries_on() {
    run("SENTINEL FAILOVER", |s| {
        let reply = cli(s.sentinels[0], &["SENTINEL", "FAILOVER", MASTER]);
        assert!(reply.contains("OK"), "SENTINEL FAILOVER: {reply}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_primary_is_replaced_and_everyone_carries_on() {
    run("SIGKILL of the primary", |s| s.kill(s.primary)).await;
}
