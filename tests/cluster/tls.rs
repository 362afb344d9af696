//! TLS on a cluster (issue 16): a TLS-only cluster reached with `rediss+cluster://`, whose
//! redirects (`ASK` mid-migration, then `MOVED`) are followed over TLS. Certificates from a
//! private CA, trusted through `RedisOptions::ca_certificate`. (TLS behind sentinels: see
//! `switch.rs`.)

use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, CancellationToken, JobId, JobOptions, JobState, Prefix, ProcessResult, Queue,
    QueueName, Worker, WorkerOptions,
};
use serde_json::json;
use support::redis_cluster::TestCluster;
use support::wait::eventually;

use crate::support;

const LIMIT: Duration = Duration::from_secs(30);

pub async fn backend(url: &str, ca_pem: Vec<u8>, prefix: &Prefix) -> RedisBackend {
    let options = RedisOptions::new(url)
        .prefix(prefix.clone())
        .ca_certificate(ca_pem)
        .response_timeout(Duration::from_secs(3));
    RedisBackend::connect(&options, QueueName::new("tls").unwrap())
        .await
        .unwrap()
}

pub async fn worker(
    backend: RedisBackend,
) -> Worker<RedisBackend, impl bullmq::Processor<RedisBackend>> {
    Worker::new(
        QueueName::new("tls").unwrap(),
        backend,
        WorkerOptions::new().drain_delay(Duration::from_secs(1)),
        |job: ActiveJob<RedisBackend>, _: CancellationToken| async move {
            ProcessResult::Ok(json!({"done": job.name}))
        },
    )
    .await
    .unwrap()
}

pub async fn completes(queue: &Queue<RedisBackend>, id: &JobId) {
    eventually("the job completes", LIMIT, || async {
        queue.job(id.clone()).get_state().await.ok().flatten() == Some(JobState::Completed)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_is_followed_through_ask_and_moved() {
    let _one = crate::one_at_a_time().await;
    let cluster = TestCluster::start_tls();
    let prefix = Prefix::new(format!("{{{}}}", support::unique_prefix())).unwrap();
    let queue = Queue::try_new(
        QueueName::new("tls").unwrap(),
        backend(&cluster.url(), cluster.ca_pem(), &prefix).await,
    )
    .expect("the backend is bound to this queue");
    let first = queue
        .add("first", &json!({"n": 1}), JobOptions::new())
        .await
        .unwrap();
    let job_key = format!("{prefix}:tls:{}", first.id.as_str());
    let slot = cluster.slot_of(&job_key);
    let from = cluster.owner_of_slot(slot);
    let to = *cluster.ports.iter().find(|p| **p != from).unwrap();
    let cli = |port: u16, args: &[&str]| cluster.node_cli(port, args);
    let id = |port: u16| cli(port, &["CLUSTER", "MYID"]).trim().to_owned();
    let (from_id, to_id, slot) = (id(from), id(to), slot.to_string());

    // Mid-migration: the job's hash is on the target already, the queue's other keys are not.
    // Reading the job meets `ASK` on the source and is asked of the target, over TLS.
    for (port, state, node) in [(to, "IMPORTING", &from_id), (from, "MIGRATING", &to_id)] {
        let reply = cli(port, &["CLUSTER", "SETSLOT", &slot, state, node]);
        assert!(reply.contains("OK"), "SETSLOT {state}: {reply}");
    }
    let target = to.to_string();
    let migrate = |keys: &[&str]| {
        let mut args = vec!["MIGRATE", "127.0.0.1", &target, "", "0", "5000", "KEYS"];
        args.extend(keys);
        let reply = cli(from, &args);
        assert!(reply.contains("OK"), "MIGRATE: {reply}");
    };
    migrate(&[&job_key]);
    let asked = cli(from, &["HGETALL", &job_key]);
    assert!(
        asked.starts_with("ASK "),
        "the source sends readers on: {asked}"
    );
    let job = queue
        .get_job(&first.id)
        .await
        .unwrap()
        .expect("read through ASK");
    assert_eq!(
        (job.name.as_str(), job.data.as_str()),
        ("first", r#"{"n":1}"#)
    );

    // The rest of the slot moves and the slot is the target's: the next call meets `MOVED`,
    // and the queue carries on there.
    loop {
        let keys = cli(from, &["CLUSTER", "GETKEYSINSLOT", &slot, "100"]);
        let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
        if keys.is_empty() {
            break;
        }
        migrate(&keys);
    }
    for port in [to, from].iter().chain(&cluster.ports) {
        cli(*port, &["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
    }
    let second = queue
        .add("second", &json!({"n": 2}), JobOptions::new())
        .await
        .unwrap();
    assert_eq!(
        second.id.as_str(),
        "2",
        "the id counter moved with the slot"
    );
    let second_key = format!("{prefix}:tls:2");
    assert_eq!(cli(to, &["EXISTS", &second_key]).trim(), "1");
    let w = worker(backend(&cluster.url(), cluster.ca_pem(), &prefix).await).await;
    completes(&queue, &first.id).await;
    completes(&queue, &second.id).await;
    w.close().await;
}
