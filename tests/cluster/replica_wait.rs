//! `RedisOptions::wait_for_replicas` (issue 16), on a private primary and its replica: an add
//! that returned is on the replica already; when the replica stops following, an add fails
//! with a `NOTREPLICATED` error (kind `Timeout`) although the primary has the job, a retry
//! under the same job id is safe once the replica is back, and a worker's finishing call
//! goes through with a warning rather than an error.

use std::sync::Arc;
use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisError, RedisOptions};
use bullmq::{BackendErrorKind, Error, JobId, JobOptions, JobState, Prefix, Queue, QueueName};
use serde_json::json;
use support::PrivateRedis;
use support::wait::eventually;

use crate::counting::{Runs, counting_worker_on};
use crate::support;

/// A primary, and a replica following it once `wait_following` returned.
fn pair() -> (PrivateRedis, PrivateRedis) {
    let primary = PrivateRedis::start();
    let primary_port = primary.port.to_string();
    let replica = PrivateRedis::start_with(move |port, _| {
        [
            "--port",
            &port.to_string(),
            "--replicaof",
            "127.0.0.1",
            &primary_port,
        ]
        .map(str::to_owned)
        .to_vec()
    });
    (primary, replica)
}

async fn wait_following(replica: &PrivateRedis) {
    eventually(
        "the replica follows the primary",
        Duration::from_secs(30),
        || async {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut replica.admin().await)
                .await
                .unwrap();
            info.contains("master_link_status:up")
        },
    )
    .await;
}

async fn backend(url: &str, prefix: &Prefix) -> RedisBackend {
    let options = RedisOptions::new(url)
        .prefix(prefix.clone())
        .response_timeout(Duration::from_secs(3))
        .wait_for_replicas(1, Duration::from_millis(300));
    RedisBackend::connect(&options, QueueName::new("waited").unwrap())
        .await
        .unwrap()
}

async fn exists(server: &PrivateRedis, key: &str) -> bool {
    let n: i64 = redis::cmd("EXISTS")
        .arg(key)
        .query_async(&mut server.admin().await)
        .await
        .unwrap();
    n == 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adds_and_finishes_wait_for_the_replicas() {
    let (primary, replica) = pair();
    wait_following(&replica).await;
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    let queue = Queue::new(
        QueueName::new("waited").unwrap(),
        backend(&primary.url(), &prefix).await,
    );
    let job_key = |n: u32| format!("{prefix}:waited:job-{n}");

    // Confirmed by the replica before it returned: no waiting for replication here.
    queue
        .add("j", &json!({}), JobOptions::new().job_id("job-1"))
        .await
        .unwrap();
    assert!(
        exists(&replica, &job_key(1)).await,
        "the replica has the add"
    );

    // The replica stops following: the primary takes the add, the replicas cannot confirm.
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut replica.admin().await)
        .await
        .unwrap();
    let err = queue
        .add("j", &json!({}), JobOptions::new().job_id("job-2"))
        .await
        .expect_err("no replica confirms");
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Timeout), "{err}");
    let Error::Backend(inner) = &err else {
        panic!("{err:?}")
    };
    let redis_err = (&**inner as &(dyn std::error::Error + 'static))
        .downcast_ref::<RedisError>()
        .expect("a RedisError");
    assert!(redis_err.is_not_replicated(), "{err}");
    assert!(exists(&primary, &job_key(2)).await, "the primary has it");
    assert!(!exists(&replica, &job_key(2)).await, "the replica has not");

    // A worker finishes the jobs all the same: unconfirmed finishes only warn.
    let runs: Runs = Arc::default();
    let worker = counting_worker_on(backend(&primary.url(), &prefix).await, "waited", &runs).await;
    for id in ["job-1", "job-2"] {
        eventually("the job completes", Duration::from_secs(30), || async {
            queue.job(JobId::from(id)).get_state().await.unwrap() == Some(JobState::Completed)
        })
        .await;
    }
    worker.close().await;
    assert_eq!(runs.lock().unwrap().get("job-2").map(Vec::len), Some(1));

    // The replica follows again: retrying the add under its id is confirmed, and adds nothing.
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(primary.port)
        .query_async(&mut replica.admin().await)
        .await
        .unwrap();
    wait_following(&replica).await;
    let again = queue
        .add("j", &json!({}), JobOptions::new().job_id("job-2"))
        .await
        .unwrap();
    assert_eq!(again.id.as_str(), "job-2");
    assert_eq!(
        queue.job(JobId::from("job-2")).get_state().await.unwrap(),
        Some(JobState::Completed),
        "the retry did not add the job again"
    );
}

#[tokio::test]
async fn a_replica_wait_that_cannot_work_is_refused() {
    let url = "redis://127.0.0.1:1";
    let queue = || QueueName::new("waited").unwrap();
    for options in [
        RedisOptions::new(url).wait_for_replicas(0, Duration::from_millis(100)),
        RedisOptions::new(url).wait_for_replicas(1, Duration::ZERO),
        RedisOptions::new(url)
            .response_timeout(Duration::from_secs(1))
            .wait_for_replicas(1, Duration::from_secs(1)),
    ] {
        let err = RedisBackend::connect(&options, queue())
            .await
            .expect_err("refused");
        assert!(matches!(err, Error::Invalid(_)), "{err}");
    }
}
