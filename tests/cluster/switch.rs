//! A sentinel failover is heard (issue 16): the sentinels switch away from a primary that
//! refuses to be demoted, so it keeps taking writes and never answers `READONLY`; calls move
//! to the new primary only if the client heard `+switch-master`. Over plain TCP and, with
//! `rediss+sentinel://`, over TLS.

use std::sync::Mutex;
use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, CancellationToken, JobId, JobOptions, JobState, Prefix, ProcessResult, Queue,
    QueueName, Worker, WorkerOptions,
};
use serde_json::json;
use support::wait::eventually;

use crate::sentinels::{MASTER, Sentinels};
use crate::support;

const LIMIT: Duration = Duration::from_secs(30);

async fn backend(sentinels: &Sentinels, ca_pem: Option<Vec<u8>>, prefix: &Prefix) -> RedisBackend {
    let mut options = RedisOptions::new(sentinels.url())
        .prefix(prefix.clone())
        .response_timeout(Duration::from_secs(3));
    if let Some(pem) = ca_pem {
        options = options.ca_certificate(pem);
    }
    RedisBackend::connect(&options, QueueName::new("switch").unwrap())
        .await
        .unwrap()
}

async fn completes(queue: &Queue<RedisBackend>, id: &JobId) {
    eventually("the job completes", LIMIT, || async {
        queue.job(id.clone()).get_state().await.ok().flatten() == Some(JobState::Completed)
    })
    .await;
}

async fn a_switch_is_heard(sentinels: &Sentinels, ca_pem: Option<Vec<u8>>) {
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    let queue = Queue::new(
        QueueName::new("switch").unwrap(),
        backend(sentinels, ca_pem.clone(), &prefix).await,
    );
    let worker = Worker::new(
        QueueName::new("switch").unwrap(),
        backend(sentinels, ca_pem, &prefix).await,
        WorkerOptions::new().drain_delay(Duration::from_secs(1)),
        |job: ActiveJob<RedisBackend>, _: CancellationToken| async move {
            ProcessResult::Ok(json!({"done": job.name}))
        },
    )
    .await
    .unwrap();
    let before = queue
        .add("before", &json!({}), JobOptions::new())
        .await
        .unwrap();
    completes(&queue, &before.id).await;
    let key = |id: &JobId| format!("{prefix}:switch:{}", id.as_str());
    let on = |port: u16, id: &JobId| sentinels.cli(port, &["EXISTS", &key(id)]).trim() == "1";
    assert!(on(sentinels.primary, &before.id));

    let reply = sentinels.cli(sentinels.sentinels[0], &["SENTINEL", "FAILOVER", MASTER]);
    assert!(reply.contains("OK"), "SENTINEL FAILOVER: {reply}");
    eventually("the sentinels name the replica", LIMIT, || async {
        sentinels.named_primary() == sentinels.replica
    })
    .await;
    let switched = std::time::Instant::now();
    let landed = Mutex::new(None);
    eventually("an add lands on the new primary", LIMIT, || async {
        let job = queue
            .add("after", &json!({}), JobOptions::new())
            .await
            .unwrap();
        let here = on(sentinels.replica, &job.id);
        *landed.lock().unwrap() = Some(job.id);
        here
    })
    .await;
    let heard_after = switched.elapsed();
    let landed = landed.lock().unwrap().clone().unwrap();
    let first_after: u64 = before.id.as_str().parse::<u64>().unwrap() + 1;
    let last: u64 = landed.as_str().parse().unwrap();
    let on_old = (first_after..last)
        .filter(|n| on(sentinels.primary, &JobId::from(n.to_string())))
        .count();
    println!(
        "switch heard: {on_old} adds went to the old primary after the sentinels named the new \
         one; the first add on the new one {heard_after:?} after"
    );
    completes(&queue, &landed).await;
    // Still a primary, never demoted: the switch was heard, not inferred from `READONLY`.
    let role = sentinels.cli(sentinels.primary, &["ROLE"]);
    assert!(role.starts_with("master"), "{role}");
    worker.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_is_heard() {
    let _one = crate::one_at_a_time().await;
    a_switch_is_heard(&Sentinels::start_undemotable(), None).await;
}

#[cfg(feature = "tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_sentinel_failover_is_heard_over_tls() {
    let _one = crate::one_at_a_time().await;
    let sentinels = Sentinels::start_tls_undemotable();
    let ca = sentinels.ca_pem();
    a_switch_is_heard(&sentinels, Some(ca)).await;
}
