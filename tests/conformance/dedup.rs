//! Idempotent enqueue (RELIABILITY R16), observed through processing: what a worker runs,
//! how many times, with which data, and the `deduplicated` events, for each of upstream's
//! deduplication modes (simple: until the job ends; throttle: for `ttl`; debounce: `extend`
//! and `replace`). The TTLs are the store's own (a Redis key's expiry, a PostgreSQL row's
//! `expire_at_ms`), so these cases run on real time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bullmq::{
    Deduplication, JobId, JobOptions, JobState, Queue, QueueEvent, ReceivedEvent, Worker,
};
use serde_json::{Value, json};

use crate::ctx::{Ctx, WAIT, dedup_on, fast};
use crate::events::{collect_until_the_end, reader};
use crate::store::Store;
use crate::support::eventually;

/// A worker recording the data of each job it runs.
async fn recording<S: Store>(
    ctx: &Ctx<S>,
) -> (
    Arc<Mutex<Vec<Value>>>,
    Worker<S::B, impl bullmq::Processor<S::B>>,
) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let log = seen.clone();
    let worker = ctx
        .worker(fast(), move |job, _| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(job.data_as::<Value>()?);
                Ok(json!(null))
            }
        })
        .await;
    (seen, worker)
}

/// The `deduplicated` events among `seen`: (job kept, deduplication id, id refused).
fn deduplicated(seen: &[Arc<ReceivedEvent>]) -> Vec<(JobId, String, JobId)> {
    seen.iter()
        .filter_map(|e| match &e.event {
            QueueEvent::Deduplicated {
                job_id,
                deduplication_id,
                deduplicated_job_id,
            } => Some((
                job_id.clone(),
                deduplication_id.clone(),
                deduplicated_job_id.clone(),
            )),
            _ => None,
        })
        .collect()
}

/// Waits until deduplication id `dedup` names no job any more (saying `what` if it does not).
async fn until_released<S: Store>(ctx: &Ctx<S>, dedup: &str, what: &str) {
    eventually(what, WAIT, || async {
        ctx.queue
            .get_deduplication_job_id(dedup)
            .await
            .unwrap()
            .is_none()
    })
    .await;
}

/// Simple mode: a second add while the job waits or runs is folded into it (one run, the
/// first add's data, a `deduplicated` event); once the job completed, the same id adds a
/// new job.
pub async fn simple_deduplication_holds_until_the_job_ends<S: Store>() {
    let ctx = Ctx::<S>::new("dedup-simple").await;
    let events = reader(&ctx).await;
    let mut sub = events.subscribe();
    let opts = || dedup_on("s");
    let first = ctx.add("d", json!(1), opts()).await;
    assert_eq!(ctx.add("d", json!(2), opts()).await, first);
    let (seen, worker) = recording(&ctx).await;
    ctx.wait_state(&first, JobState::Completed).await;
    let next = ctx.add("d", json!(3), opts()).await;
    assert_ne!(next, first);
    ctx.wait_state(&next, JobState::Completed).await;
    worker.close().await;
    assert_eq!(*seen.lock().unwrap(), [json!(1), json!(3)]);
    let events_seen = collect_until_the_end(&ctx, &mut sub).await;
    let folded = deduplicated(&events_seen);
    assert_eq!(folded.len(), 1, "{folded:?}");
    assert_eq!((&folded[0].0, folded[0].1.as_str()), (&first, "s"));
    assert_ne!(folded[0].2, first);
    events.close().await;
}

/// Sixteen tasks adding with one deduplication id, and sixteen with one job id, at once:
/// one job each, every add answered with its id, each run once.
pub async fn concurrent_duplicate_adds_make_one_job<S: Store>() {
    let ctx = Ctx::<S>::new("dedup-race").await;
    let shared = Arc::new(
        Queue::try_new(ctx.name.clone(), ctx.backend().await)
            .expect("the backend is bound to this queue"),
    );
    let mut adds = tokio::task::JoinSet::new();
    for n in 0..32 {
        let queue = shared.clone();
        adds.spawn(async move {
            let opts = if n % 2 == 0 {
                dedup_on("race")
            } else {
                JobOptions::new().job_id("same-id")
            };
            (n % 2, queue.add("r", &json!(n), opts).await.unwrap().id)
        });
    }
    let mut ids: [Vec<JobId>; 2] = [Vec::new(), Vec::new()];
    while let Some(joined) = adds.join_next().await {
        let (kind, id) = joined.unwrap();
        ids[kind].push(id);
    }
    for group in &ids {
        assert_eq!(group.len(), 16);
        assert!(group.iter().all(|id| *id == group[0]), "{group:?}");
    }
    assert_eq!(ids[1][0], JobId::from("same-id"));
    assert_eq!(ctx.queue.count().await.unwrap(), 2);
    let (seen, worker) = recording(&ctx).await;
    ctx.wait_state(&ids[0][0], JobState::Completed).await;
    ctx.wait_state(&ids[1][0], JobState::Completed).await;
    worker.close().await;
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// Throttle mode (`ttl`): adds within the TTL are folded into the first job even after it
/// completed; once the TTL is over the next add is a new job.
pub async fn throttle_holds_for_the_ttl_even_after_the_job_ends<S: Store>() {
    let ctx = Ctx::<S>::new("dedup-throttle").await;
    let opts =
        || JobOptions::new().deduplication(Deduplication::new("t").ttl(Duration::from_secs(5)));
    let (seen, worker) = recording(&ctx).await;
    let first = ctx.add("d", json!(1), opts()).await;
    ctx.wait_state(&first, JobState::Completed).await;
    // Finished, but within the 5 s TTL.
    assert_eq!(ctx.add("d", json!(2), opts()).await, first);
    until_released(&ctx, "t", "the TTL is over").await;
    let next = ctx.add("d", json!(3), opts()).await;
    assert_ne!(next, first);
    ctx.wait_state(&next, JobState::Completed).await;
    worker.close().await;
    assert_eq!(*seen.lock().unwrap(), [json!(1), json!(3)]);
}

/// Debounce with `extend`: each add within the TTL folds into the first job and restarts the
/// TTL, so adds 0.4 s apart keep one job for longer than the TTL; after the last add's TTL,
/// a new job.
pub async fn extend_restarts_the_ttl_with_each_add<S: Store>() {
    let ctx = Ctx::<S>::new("dedup-extend").await;
    let ttl = Duration::from_secs(2);
    let opts = || JobOptions::new().deduplication(Deduplication::new("e").ttl(ttl).extend(true));
    let first = ctx.add("d", json!(1), opts()).await;
    let since = Instant::now();
    let mut n = 1;
    // Past the first add's TTL by half a second: without `extend` the last adds would be
    // new jobs.
    while since.elapsed() < ttl + Duration::from_millis(500) {
        tokio::time::sleep(Duration::from_millis(400)).await;
        n += 1;
        assert_eq!(ctx.add("d", json!(n), opts()).await, first, "add {n}");
    }
    assert_eq!(ctx.queue.count().await.unwrap(), 1);
    until_released(&ctx, "e", "the extended TTL is over").await;
    let next = ctx.add("d", json!("after"), opts()).await;
    assert_ne!(next, first);
    let (seen, worker) = recording(&ctx).await;
    ctx.wait_state(&first, JobState::Completed).await;
    ctx.wait_state(&next, JobState::Completed).await;
    worker.close().await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen.contains(&json!(1)) && seen.contains(&json!("after")),
        "{seen:?}"
    );
}

/// Debounce with `replace` (and `extend`): an add while the job is still delayed removes it
/// and takes its place, so the worker runs the last add's data, once; each replacement is
/// announced with `removed` and `deduplicated` (the new job, the one it replaced).
pub async fn replace_runs_only_the_last_delayed_job<S: Store>() {
    let ctx = Ctx::<S>::new("dedup-replace").await;
    let events = reader(&ctx).await;
    let mut sub = events.subscribe();
    let opts = || {
        JobOptions::new()
            .delay(Duration::from_secs(3))
            .deduplication(
                Deduplication::new("r")
                    .ttl(Duration::from_secs(10))
                    .extend(true)
                    .replace(true),
            )
    };
    let a = ctx.add("d", json!("a"), opts()).await;
    let b = ctx.add("d", json!("b"), opts()).await;
    let c = ctx.add("d", json!("c"), opts()).await;
    assert!(a != b && b != c && a != c, "{a} {b} {c}");
    assert_eq!((ctx.state(&a).await, ctx.state(&b).await), (None, None));
    assert_eq!(ctx.state(&c).await, Some(JobState::Delayed));
    assert_eq!(
        ctx.queue.get_deduplication_job_id("r").await.unwrap(),
        Some(c.clone())
    );
    let (seen, worker) = recording(&ctx).await;
    ctx.wait_state(&c, JobState::Completed).await;
    worker.close().await;
    assert_eq!(*seen.lock().unwrap(), [json!("c")]);
    let events_seen = collect_until_the_end(&ctx, &mut sub).await;
    assert_eq!(
        deduplicated(&events_seen),
        [
            (b.clone(), "r".to_owned(), a.clone()),
            (c.clone(), "r".to_owned(), b.clone())
        ]
    );
    for gone in [&a, &b] {
        assert!(
            events_seen.iter().any(|e| matches!(&e.event,
                QueueEvent::Removed { job_id, .. } if job_id == gone)),
            "no `removed` for {gone}"
        );
    }
    events.close().await;
}
