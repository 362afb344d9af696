//! A sentinel failover is heard (issue 16): the sentinels switch away from a primary that
//! refuses to be demoted, so it keeps taking writes and never answers `READONLY`; calls move
//! to the new primary only if the client heard `+switch-master`. Over plain TCP and, with
//! `rediss+sentinel://`, over TLS.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, CancellationToken, JobId, JobOptions, JobState, Prefix, ProcessResult, Queue,
    QueueName, Worker, WorkerOptions,
};
use bullmq_redis::__private::switches_heard;
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
    let producer = backend(sentinels, ca_pem.clone(), &prefix).await;
    let queue = Queue::try_new(QueueName::new("switch").unwrap(), producer.clone())
        .expect("the backend is bound to this queue");
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

    let failover_at = SystemTime::now();
    let reply = sentinels.cli(sentinels.sentinels[0], &["SENTINEL", "FAILOVER", MASTER]);
    assert!(reply.contains("OK"), "SENTINEL FAILOVER: {reply}");
    eventually("the sentinels name the replica", LIMIT, || async {
        sentinels.named_primary() == sentinels.replica
    })
    .await;
    let switched = std::time::Instant::now();
    let heard = || switches_heard(&producer).iter().any(|t| *t >= failover_at);
    // Each add, and whether the producer had heard of the switch before it was sent. Custom
    // ids: the new primary's id counter is behind the old one's, so it hands out again the
    // ids of the adds the old one took.
    let added: Mutex<Vec<(JobId, bool)>> = Mutex::default();
    let next_id = || format!("after-{}", added.lock().unwrap().len());
    eventually("an add lands on the new primary", LIMIT, || async {
        let heard_before = heard();
        // A failed add (the switch under way) is tried again.
        let opts = JobOptions::new().job_id(next_id());
        let Ok(job) = queue.add("after", &json!({}), opts).await else {
            return false;
        };
        let here = on(sentinels.replica, &job.id);
        added.lock().unwrap().push((job.id, heard_before));
        here
    })
    .await;
    let heard_after = switched.elapsed();
    assert!(heard(), "the producer never heard of the switch");
    // And the adds after it go there too.
    for _ in 0..10 {
        let opts = JobOptions::new().job_id(next_id());
        let job = queue.add("later", &json!({}), opts).await.unwrap();
        added.lock().unwrap().push((job.id, true));
    }
    let added = added.into_inner().unwrap();
    let landed = added.last().unwrap().0.clone();
    let on_old = |heard_first: bool| {
        added
            .iter()
            .filter(|(id, h)| *h == heard_first && on(sentinels.primary, id))
            .count()
    };
    let (old_before, old_after) = (on_old(false), on_old(true));
    println!(
        "switch heard: {old_before} adds went to the old primary after the sentinels named the \
         new one, before the producer heard of it, {old_after} after; the first add on the new \
         one {heard_after:?} after"
    );
    assert_eq!(
        old_after, 0,
        "adds sent after the switch was heard went to the old primary"
    );
    for (id, _) in added.iter().filter(|(_, h)| *h) {
        assert!(
            on(sentinels.replica, id),
            "{id:?} is not on the new primary"
        );
    }
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
