//! `RedisOptions::wait_for_replicas` (issue 16), on a private primary and its replica: an add
//! that returned is on the replica already; when the replica stops following, an add fails
//! with a `NOTREPLICATED` error (kind `Timeout`) although the primary has the job, a retry
//! under the same job id is safe once the replica is back, and a worker's finishing call
//! goes through with a warning rather than an error. The error carries the ids the jobs were
//! added under (ids Redis assigned too, and every job of a bulk, even re-run after
//! `NOSCRIPT`); a `WAIT` the ACL refuses counts as no replica, not as a failed add; on a
//! cluster, a waited add that meets `MOVED` follows it.

use std::sync::Arc;
use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisError, RedisOptions};
use bullmq::{
    BackendErrorKind, BulkJob, Error, JobId, JobOptions, JobState, Prefix, Queue, QueueName,
};
use serde_json::json;
use support::PrivateRedis;
use support::redis_cluster::TestCluster;
use support::wait::eventually;

use crate::counting::{Runs, backend_waiting, counting_worker_on};
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

/// The `RedisError` inside `err`.
fn redis_error(err: &Error) -> &RedisError {
    let Error::Backend(inner) = err else {
        panic!("{err:?}")
    };
    (&**inner as &(dyn std::error::Error + 'static))
        .downcast_ref::<RedisError>()
        .expect("a RedisError")
}

/// `err` is a `NOTREPLICATED` error; the ids it carries.
fn not_replicated_ids(err: &Error) -> Vec<String> {
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Timeout), "{err}");
    let redis_err = redis_error(err);
    assert!(redis_err.is_not_replicated(), "{err}");
    redis_err.job_ids.clone()
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
    let queue = Queue::try_new(
        QueueName::new("waited").unwrap(),
        backend(&primary.url(), &prefix).await,
    )
    .expect("the backend is bound to this queue");
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
    assert_eq!(not_replicated_ids(&err), ["job-2"]);
    assert!(exists(&primary, &job_key(2)).await, "the primary has it");
    assert!(!exists(&replica, &job_key(2)).await, "the replica has not");

    // Without a custom id, the error names the id Redis assigned: a retry can reuse it.
    let err = queue
        .add("j", &json!({}), JobOptions::new())
        .await
        .expect_err("no replica confirms");
    let assigned = not_replicated_ids(&err);
    assert_eq!(assigned.len(), 1, "{assigned:?}");
    let key = format!("{prefix}:waited:{}", assigned[0]);
    assert!(exists(&primary, &key).await, "the primary has {key}");

    // A bulk names every job it added, those re-run after `NOSCRIPT` too.
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut primary.admin().await)
        .await
        .unwrap();
    let bulk = (0..3)
        .map(|_| BulkJob {
            name: "j".to_owned(),
            data: json!({}),
            opts: JobOptions::new(),
        })
        .collect();
    let err = queue.add_bulk(bulk).await.expect_err("no replica confirms");
    let added = not_replicated_ids(&err);
    assert_eq!(added.len(), 3, "{added:?}");
    for id in &added {
        let key = format!("{prefix}:waited:{id}");
        assert!(exists(&primary, &key).await, "the primary has {key}");
    }

    // A worker finishes the jobs all the same: unconfirmed finishes only warn.
    let runs: Runs = Arc::default();
    let worker = counting_worker_on(backend(&primary.url(), &prefix).await, "waited", &runs).await;
    let every: Vec<String> = ["job-1", "job-2"]
        .into_iter()
        .map(str::to_owned)
        .chain(assigned)
        .chain(added)
        .collect();
    for id in &every {
        eventually("the job completes", Duration::from_secs(30), || async {
            queue
                .job(JobId::from(id.as_str()))
                .get_state()
                .await
                .unwrap()
                == Some(JobState::Completed)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_the_acl_refuses_counts_as_no_replica() {
    let (primary, replica) = pair();
    wait_following(&replica).await;
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER", "nowait", "on", ">secret", "~*", "&*", "+@all", "-wait",
        ])
        .query_async(&mut primary.admin().await)
        .await
        .unwrap();
    let url = format!("redis://nowait:secret@127.0.0.1:{}", primary.port);
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    let queue = Queue::try_new(
        QueueName::new("waited").unwrap(),
        backend(&url, &prefix).await,
    )
    .expect("the backend is bound to this queue");

    // The add went through: the error says so, with its id, rather than `NOPERM`.
    let err = queue
        .add("j", &json!({}), JobOptions::new().job_id("acl-1"))
        .await
        .expect_err("WAIT is refused");
    assert_eq!(not_replicated_ids(&err), ["acl-1"]);
    assert!(exists(&primary, &format!("{prefix}:waited:acl-1")).await);

    // A finishing call whose `WAIT` is refused still finishes the job.
    let runs: Runs = Arc::default();
    let worker = counting_worker_on(backend(&url, &prefix).await, "waited", &runs).await;
    eventually("the job completes", Duration::from_secs(30), || async {
        queue.job(JobId::from("acl-1")).get_state().await.unwrap() == Some(JobState::Completed)
    })
    .await;
    worker.close().await;
    assert_eq!(runs.lock().unwrap().get("acl-1").map(Vec::len), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waited_add_follows_a_moved_slot() {
    // Nothing is killed: the default node timeout, so no mistaken failover of a starved node.
    let cluster = TestCluster::start_with_node_timeout(15_000);
    let prefix = Prefix::new(format!("{{{}}}", support::unique_prefix())).unwrap();
    let wait_key = format!("{prefix}:waited:wait");
    let from = cluster.owner_of(&wait_key);
    let slot = cluster.slot_of(&wait_key);
    let queue = Queue::try_new(
        QueueName::new("waited").unwrap(),
        backend_waiting(&cluster.url(), &prefix, "waited", true).await,
    )
    .expect("the backend is bound to this queue");
    // Under load a replica may confirm late (`NOTREPLICATED`): the job is added all the same.
    let add = |id: &'static str| {
        let queue = &queue;
        async move {
            match queue
                .add("j", &json!({}), JobOptions::new().job_id(id))
                .await
            {
                Ok(job) => assert_eq!(job.id.as_str(), id),
                Err(err) => assert_eq!(not_replicated_ids(&err), [id]),
            }
        }
    };
    add("moved-1").await;

    let to = cluster
        .primaries()
        .into_iter()
        .find(|p| *p != from)
        .unwrap();
    let ports = cluster.ports.clone();
    tokio::task::spawn_blocking(move || TestCluster::migrate_slot(&ports, slot, from, to))
        .await
        .unwrap();

    // The backend still sends to `from`, which answers `MOVED`: followed, not returned.
    add("moved-2").await;
    let n: i64 = redis::cmd("EXISTS")
        .arg(format!("{prefix}:waited:moved-2"))
        .query_async(&mut TestCluster::node(to).await)
        .await
        .unwrap();
    assert_eq!(n, 1, "the new owner of the slot has the job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waited_calls_do_not_hold_up_the_others() {
    // No replica: each `WAIT` blocks its connection for its whole timeout.
    let primary = PrivateRedis::start();
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    let options = RedisOptions::new(primary.url())
        .prefix(prefix.clone())
        .response_timeout(Duration::from_secs(15))
        .wait_for_replicas(1, Duration::from_secs(10));
    let queue = Queue::try_new(
        QueueName::new("waited").unwrap(),
        RedisBackend::connect(&options, QueueName::new("waited").unwrap())
            .await
            .unwrap(),
    )
    .expect("the backend is bound to this queue");
    // Two waited adds at once: more than the one direct connection of the default.
    let adds = async {
        let data = json!({});
        let add = |id: &'static str| queue.add("j", &data, JobOptions::new().job_id(id));
        tokio::join!(add("w-1"), add("w-2"))
    };
    let other = async {
        eventually("both adds wait", Duration::from_secs(30), || async {
            let clients: String = redis::cmd("CLIENT")
                .arg("LIST")
                .query_async(&mut primary.admin().await)
                .await
                .unwrap();
            clients.matches("cmd=wait").count() == 2
        })
        .await;
        // On a fresh server the adds' `EVALSHA` meets `NOSCRIPT` first: the scripts may not
        // have run yet, so only the answer matters, not the count.
        queue.count().await.unwrap()
    };
    // Another call goes through while both still wait (it would queue behind a `WAIT` on a
    // shared connection, and come back only after it).
    tokio::pin!(adds);
    tokio::select! {
        biased;
        (first, second) = &mut adds => panic!("the adds returned first: {first:?} {second:?}"),
        _ = other => {}
    }
    let (first, second) = adds.await;
    for (added, id) in [(first, "w-1"), (second, "w-2")] {
        assert_eq!(not_replicated_ids(&added.expect_err("no replica")), [id]);
    }
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
