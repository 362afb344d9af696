//! Network faults between a worker and Redis (docs/RELIABILITY.md R7), through the in-repo proxy
//! (`test-support/src/proxy.rs`), with the producer and the checks connected directly: added
//! latency changes no outcome; a partition longer than the lock hands the job to another
//! worker, the partitioned worker's late finish is refused, and once the network is back the
//! worker notices its half-open connections on its own and processes jobs again.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::PrivateRedis;
use crate::support::proxy::Proxy;
use crate::support::wait::eventually;
use bullmq::job::JobType;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    Error, JobId, JobOptions, JobState, Prefix, Queue, QueueName, Worker, WorkerEvent,
    WorkerOptions,
};
use serde_json::{Value, json};

/// A queue under a unique prefix on `server`, reached at `url`.
async fn backend(url: &str, prefix: &str, timeout: Duration) -> RedisBackend {
    let options = RedisOptions::new(url)
        .prefix(Prefix::new(prefix).unwrap())
        .response_timeout(timeout);
    RedisBackend::connect(&options, QueueName::new("r7").unwrap())
        .await
        .unwrap()
}

async fn state(queue: &Queue<RedisBackend>, id: &JobId) -> Option<JobState> {
    queue.job(id.clone()).get_state().await.ok().flatten()
}

async fn proxy_to(server: &PrivateRedis) -> Proxy {
    Proxy::start(format!("127.0.0.1:{}", server.port).parse().unwrap()).await
}

#[tokio::test]
async fn r7_added_latency_changes_no_outcome() {
    const N: usize = 30;
    let server = PrivateRedis::start();
    let proxy = proxy_to(&server).await;
    proxy.set_latency(Duration::from_millis(100));
    let prefix = support::unique_prefix();
    let queue = Queue::try_new(
        QueueName::new("r7").unwrap(),
        backend(&server.url(), &prefix, Duration::from_secs(5)).await,
    )
    .expect("the backend is bound to this queue");
    let runs = Arc::new(Mutex::new(HashMap::<String, u32>::new()));
    let seen = Arc::clone(&runs);
    // Every third job fails its first attempt and succeeds on its retry.
    let worker = Worker::new(
        QueueName::new("r7").unwrap(),
        backend(&proxy.redis_url(), &prefix, Duration::from_secs(5)).await,
        WorkerOptions::new()
            .concurrency(5)
            .lock_duration(Duration::from_secs(2))
            .drain_delay(Duration::from_millis(500)),
        move |job, _| {
            let seen = Arc::clone(&seen);
            async move {
                *seen.lock().unwrap().entry(job.id.to_string()).or_insert(0) += 1;
                let data: Value = job.data_as()?;
                if data["i"].as_u64().unwrap_or(0).is_multiple_of(3) && job.attempts_made == 0 {
                    return Err(bullmq::JobError::failed("first attempt fails"));
                }
                Ok(json!({"i": data["i"]}))
            }
        },
    )
    .await
    .unwrap();
    let mut ids = Vec::new();
    for i in 0..N {
        let job = queue
            .add("slow-link", &json!({"i": i}), JobOptions::new().attempts(2))
            .await
            .unwrap();
        ids.push((i, job.id));
    }
    eventually("every job completed", Duration::from_secs(60), || async {
        let completed = [JobType::State(JobState::Completed)];
        queue.get_job_count_by_types(&completed).await.unwrap() >= N as u64
    })
    .await;
    worker.close().await;
    for (i, id) in &ids {
        let job = queue.get_job(id).await.unwrap().unwrap();
        let value: Value = job.return_value_as().unwrap().unwrap();
        assert_eq!(value, json!({"i": i}));
        let retried = i.is_multiple_of(3);
        assert_eq!(job.attempts_made, if retried { 2 } else { 1 }, "job {i}");
        assert_eq!(
            runs.lock().unwrap()[id.as_str()],
            job.attempts_made,
            "job {i}"
        );
    }
}

#[tokio::test]
async fn r7_a_partition_longer_than_the_lock_hands_the_job_over_and_the_worker_comes_back() {
    let server = PrivateRedis::start();
    let proxy = proxy_to(&server).await;
    let prefix = support::unique_prefix();
    let server_url = server.url();
    let direct = || backend(&server_url, &prefix, Duration::from_secs(5));
    let queue = Queue::try_new(QueueName::new("r7").unwrap(), direct().await)
        .expect("the backend is bound to this queue");
    let opts = |name: &str| {
        WorkerOptions::new()
            .name(name.to_owned())
            .lock_duration(Duration::from_secs(1))
            .stalled_interval(Duration::from_millis(300))
            .drain_delay(Duration::from_millis(500))
            .run_retry_delay(Duration::from_millis(200))
    };
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    // Worker A reaches Redis through the proxy only; its calls give up after 1 s. With a
    // free slot, its loop keeps waiting on its blocking connection through the partition, so
    // it has to reopen that connection while nothing gets through.
    let a = Worker::new(
        QueueName::new("r7").unwrap(),
        backend(&proxy.redis_url(), &prefix, Duration::from_secs(1)).await,
        opts("a").concurrency(2),
        move |job, _| {
            let started = started_tx.clone();
            async move {
                let _ = started.send(job.id.clone());
                // Fixed wait: simulates work (a job that takes this long).
                tokio::time::sleep(Duration::from_millis(500)).await;
                Ok(json!("a"))
            }
        },
    )
    .await
    .unwrap();
    let mut a_events = a.events();
    let job = queue
        .add("cut-off", &json!({}), JobOptions::new())
        .await
        .unwrap();
    assert_eq!(started.recv().await.as_ref(), Some(&job.id));
    // Cut while A's job runs (500 ms) and its loop, finding nothing more, waits on the marker.
    // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
    tokio::time::sleep(Duration::from_millis(250)).await;
    proxy.partition();

    // Worker B, connected directly, takes the job back once A's lock has run out.
    let b = Worker::new(
        QueueName::new("r7").unwrap(),
        direct().await,
        opts("b"),
        |_job, _| async { Ok(json!("b")) },
    )
    .await
    .unwrap();
    eventually("B completed the job", Duration::from_secs(15), || async {
        state(&queue, &job.id).await == Some(JobState::Completed)
    })
    .await;
    b.close().await;
    // The partition outlasts A's lock, and lasts long enough that A's loop, its blocking
    // wait's watchdog fired, reopens that connection while nothing gets through.
    // Fixed wait: the partition lasts longer than A's lock (a server-side expiry).
    tokio::time::sleep(Duration::from_secs(4)).await;
    proxy.heal();

    // A's finish, retried until the network is back, is refused: the job stays B's.
    let refused = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            match a_events.recv().await {
                Ok(WorkerEvent::Error(err)) if matches!(&*err, Error::Script(_)) => break err,
                Ok(WorkerEvent::Completed { job: done, .. }) if done.id == job.id => {
                    panic!("A completed a job it had lost")
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("A's events ended: {e}"),
            }
        }
    })
    .await
    .expect("A's late finish is refused once the network is back");
    let Error::Script(script) = &*refused else {
        unreachable!()
    };
    assert_eq!(script.command, "moveToFinished", "{refused}");
    let done = queue.get_job(&job.id).await.unwrap().unwrap();
    assert_eq!(done.return_value.as_deref(), Some("\"b\""));
    assert!(done.failed_reason.is_none());

    // A noticed its dead connections by itself: a new job is taken, over new ones.
    let after = queue
        .add("after", &json!({}), JobOptions::new())
        .await
        .unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(15), started.recv())
            .await
            .expect("A takes jobs again after the partition")
            .as_ref(),
        Some(&after.id)
    );
    eventually(
        "A completed the new job",
        Duration::from_secs(15),
        || async { state(&queue, &after.id).await == Some(JobState::Completed) },
    )
    .await;
    assert!(a.is_running());
    a.close().await;
}
