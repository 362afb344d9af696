//! Job schedulers: `every` and cron schedules upserted, iterated by a worker, replaced, limited
//! and removed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::RepeatOptions;
use bullmq::scheduler::{JobScheduler, JobTemplate};
use bullmq::{JobId, JobOptions, JobState};
use serde_json::{Value, json};

use crate::ctx::{Ctx, WAIT, fast, now_ms};
use crate::store::Store;
use crate::support::eventually;

fn every(ms: u64) -> RepeatOptions {
    RepeatOptions::every(Duration::from_millis(ms))
}

/// The millis of an iteration id `repeat:<scheduler>:<millis>`.
fn millis_of(id: &JobId, scheduler: &str) -> u64 {
    let prefix = format!("repeat:{scheduler}:");
    id.as_str()
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{id} is not an iteration of {scheduler}"))
        .parse()
        .unwrap()
}

/// A worker recording each job it runs: (id, name, data).
async fn recording<S: Store>(
    ctx: &Ctx<S>,
) -> (
    Arc<Mutex<Vec<(JobId, String, Value)>>>,
    bullmq::Worker<S::B, impl bullmq::Processor<S::B>>,
) {
    let seen: Arc<Mutex<Vec<(JobId, String, Value)>>> = Arc::default();
    let log = seen.clone();
    let worker = ctx
        .worker(fast(), move |job, _| {
            let log = log.clone();
            async move {
                let data: Value = job.data_as()?;
                log.lock()
                    .unwrap()
                    .push((job.id.clone(), job.name.clone(), data));
                Ok(json!("tick"))
            }
        })
        .await;
    (seen, worker)
}

/// What a [`recording`] worker ran once it had run `n` jobs (`what` names them), with the slot
/// (ms) of each as an iteration of `scheduler`; the worker is closed.
async fn run_iterations<S: Store>(
    ctx: &Ctx<S>,
    n: usize,
    what: &str,
    scheduler: &str,
) -> (Vec<(JobId, String, Value)>, Vec<u64>) {
    let (seen, worker) = recording(ctx).await;
    eventually(what, WAIT, || async { seen.lock().unwrap().len() >= n }).await;
    worker.close().await;
    let seen = seen.lock().unwrap().clone();
    let slots = seen
        .iter()
        .map(|(id, _, _)| millis_of(id, scheduler))
        .collect();
    (seen, slots)
}

pub async fn an_every_scheduler_runs_its_iterations<S: Store>() {
    let ctx = Ctx::<S>::new("every").await;
    let schedulers = JobScheduler::new(ctx.backend().await);
    let template = JobTemplate::named("tick")
        .data(json!({"a": 1}))
        .opts(JobOptions::new().attempts(2));
    let first = schedulers
        .upsert("sched", &every(300), template)
        .await
        .unwrap()
        .unwrap();
    assert!(first.delay <= Duration::from_millis(300));
    let (seen, slots) = run_iterations(&ctx, 3, "three iterations", "sched").await;
    assert_eq!(slots[0], millis_of(&first.id, "sched"));
    // Iterations keep to the 300 ms grid; one taken after its successor's slot has passed
    // skips to the next slot ahead, as upstream's catch-up does on a slow machine.
    for pair in slots.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= 300 && gap % 300 == 0, "{slots:?}");
    }
    for (id, name, data) in &seen {
        assert_eq!((name.as_str(), data), ("tick", &json!({"a": 1})));
        let job = ctx.job(id).await;
        assert_eq!(job.opts.attempts, Some(2));
        assert_eq!(job.repeat_job_key.as_deref(), Some("sched"));
        assert_eq!(job.return_value.as_deref(), Some("\"tick\""));
    }
    let record = schedulers.get("sched").await.unwrap().unwrap();
    assert_eq!(record.name, "tick");
    assert!(record.iteration_count >= 3, "{record:?}");
    assert_eq!(record.schedule.every, Some(Duration::from_millis(300)));
}

pub async fn a_cron_scheduler_runs_on_its_pattern<S: Store>() {
    let ctx = Ctx::<S>::new("cron").await;
    let schedulers = JobScheduler::new(ctx.backend().await);
    let schedule = RepeatOptions {
        pattern: Some("*/1 * * * * *".into()),
        ..RepeatOptions::default()
    };
    let first = schedulers
        .upsert("cron", &schedule, JobTemplate::named("c"))
        .await
        .unwrap()
        .unwrap();
    let first_slot = millis_of(&first.id, "cron");
    assert_eq!(first_slot % 1000, 0, "a whole second");
    assert!(first_slot >= now_ms() - 1000);
    let (seen, slots) = run_iterations(&ctx, 2, "two iterations", "cron").await;
    assert_eq!(slots[0], first_slot);
    assert_eq!(slots[1] - slots[0], 1000);
    for (id, _, data) in &seen {
        let job = ctx.job(id).await;
        assert!(
            job.processed_on.unwrap() >= millis_of(id, "cron"),
            "ran before its slot"
        );
        assert_eq!(*data, json!({}));
    }
    let listed = schedulers.list(0, -1, true).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].schedule.pattern.as_deref(), Some("*/1 * * * * *"));
}

pub async fn upsert_replaces_and_remove_removes<S: Store>() {
    let ctx = Ctx::<S>::new("upsert").await;
    let schedulers = JobScheduler::new(ctx.backend().await);
    // Starting later, so that the pending iteration is delayed.
    let later = |start: u64| every(3_600_000).start_date(now_ms() + start);
    let hourly = later(3_600_000);
    // Upserted twice: the second template replaces the first.
    let mut upserted = None;
    for (name, v) in [("one", 1), ("two", 2)] {
        let template = JobTemplate::named(name).data(json!({ "v": v }));
        upserted = schedulers.upsert("s1", &hourly, template).await.unwrap();
        assert!(upserted.is_some(), "upsert {name}");
    }
    let b = upserted.unwrap();
    assert_eq!(schedulers.count().await.unwrap(), 1);
    let record = schedulers.get("s1").await.unwrap().unwrap();
    assert_eq!(record.name, "two");
    assert_eq!(record.template_data.as_deref(), Some(r#"{"v":2}"#));
    // One pending iteration, carrying the new template.
    assert_eq!(ctx.queue.get_delayed_count(None).await.unwrap(), 1);
    let pending = ctx.job(&b.id).await;
    assert_eq!(pending.name, "two");
    assert_eq!(pending.data_as::<Value>().unwrap(), json!({"v": 2}));
    assert_eq!(ctx.state(&b.id).await, Some(JobState::Delayed));
    let c = schedulers
        .upsert("s2", &later(7_200_000), JobTemplate::named("three"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ctx.state(&c.id).await, Some(JobState::Delayed));
    assert_eq!(schedulers.count().await.unwrap(), 2);
    let listed = |ascending| {
        let schedulers = &schedulers;
        async move {
            let all = schedulers.list(0, -1, ascending).await.unwrap();
            all.into_iter().map(|r| r.id).collect::<Vec<String>>()
        }
    };
    assert_eq!(listed(true).await, ["s1", "s2"], "by next run");
    assert_eq!(listed(false).await, ["s2", "s1"]);

    assert!(schedulers.remove("s1").await.unwrap());
    assert!(!schedulers.remove("s1").await.unwrap());
    assert!(schedulers.get("s1").await.unwrap().is_none());
    assert!(
        ctx.queue.get_job(&b.id).await.unwrap().is_none(),
        "its pending iteration went too"
    );
    assert_eq!(schedulers.count().await.unwrap(), 1);
    assert_eq!(ctx.queue.get_delayed_count(None).await.unwrap(), 1);
    assert!(ctx.queue.get_job(&c.id).await.unwrap().is_some());
}

pub async fn a_limited_scheduler_stops_after_its_limit<S: Store>() {
    let ctx = Ctx::<S>::new("limited").await;
    let schedulers = JobScheduler::new(ctx.backend().await);
    let schedule = RepeatOptions {
        every: Some(Duration::from_millis(200)),
        limit: Some(2),
        ..RepeatOptions::default()
    };
    schedulers
        .upsert("lim", &schedule, JobTemplate::named("l"))
        .await
        .unwrap()
        .unwrap();
    let (seen, worker) = recording(&ctx).await;
    eventually("two iterations", WAIT, || async {
        seen.lock().unwrap().len() >= 2
    })
    .await;
    // A next iteration is stored no later than the one before it completes; with both
    // completed and none pending, nothing is left to run.
    eventually("two completed, no iteration pending", WAIT, || async {
        ctx.count_in(JobState::Completed).await == 2 && ctx.queue.count().await.unwrap() == 0
    })
    .await;
    worker.close().await;
    assert_eq!(seen.lock().unwrap().len(), 2, "ran past its limit");
}

/// The iteration count is the scheduler's own: an upsert ignores a `count` the caller passes
/// and starts from 1, so a limit is not used up before the first run (Node.js 6.7.6; 6.7.0
/// counted on from the given value and added nothing here).
pub async fn an_upsert_ignores_a_given_iteration_count<S: Store>() {
    let ctx = Ctx::<S>::new("count").await;
    let schedulers = JobScheduler::new(ctx.backend().await);
    let schedule = every(1_000)
        .limit(2)
        .count(5)
        .start_date(now_ms() + 3_600_000);
    let first = schedulers
        .upsert("cnt", &schedule, JobTemplate::named("c"))
        .await
        .unwrap()
        .expect("a first iteration");
    let job = ctx.job(&first.id).await;
    let repeat = job.opts.repeat.expect("an iteration carries its schedule");
    assert_eq!(repeat.count, Some(1));
    assert_eq!(repeat.limit, Some(2));
}
