//! Hosts whose clocks disagree with each other and with the server (RELIABILITY R18): each
//! producer, worker and checker here runs on a backend of its own whose clock is set apart
//! (`OffsetClock`, `ManualClock`), as a host with a skewed clock would be. What each case
//! shows, and the bound where there is one, is in docs/RELIABILITY.md (R18).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::backend::{StalledCheck, Transitions};
use bullmq::clock::{Clock, ManualClock, OffsetClock};
use bullmq::scheduler::{JobScheduler, JobTemplate};
use bullmq::{JobId, JobOptions, JobState, Queue, RepeatOptions, Worker, WorkerOptions};
use serde_json::json;

use crate::ctx::{Ctx, WAIT, fast, now_ms};
use crate::store::Store;
use crate::support::delayed::add_delayed;
use crate::support::eventually;
use crate::support::held::add_and_hold;

/// The case's queue on a backend of its own reading `clock`.
async fn queue_at<S: Store, C: Clock + Clone>(ctx: &Ctx<S>, clock: &C) -> Queue<S::B> {
    Queue::try_new(
        ctx.name.clone(),
        ctx.store.backend_at(&ctx.name, clock).await,
    )
    .expect("the backend is bound to this queue")
}

/// A held lock is judged at the clock of the backend asking, the clock that stamped it: a
/// host 60 s behind the server cannot remove a job another of its workers holds (PostgreSQL
/// compared the lock with the server's clock and removed it), and a host 60 s ahead can
/// remove it once the lock ran out (PostgreSQL refused until the server's clock caught up).
pub async fn remove_checks_locks_at_the_backends_clock<S: Store>() {
    let ctx = Ctx::<S>::new("remove-clock").await;
    let behind = queue_at(&ctx, &OffsetClock::new(-60_000)).await;
    let held = add_and_hold(&behind, "a", "t", Duration::from_secs(30)).await;
    assert!(
        !behind.remove(&held, false).await.unwrap(),
        "the lock holds"
    );
    assert!(!behind.remove(&held, true).await.unwrap(), "the lock holds");
    assert_eq!(ctx.state(&held).await, Some(JobState::Active));

    let ahead = queue_at(&ctx, &OffsetClock::new(60_000)).await;
    let short = add_and_hold(&ahead, "b", "t", Duration::from_millis(300)).await;
    // Redis expires the key after 300 ms of its own time; PostgreSQL's lock ends at the
    // backend's clock 300 ms after it was taken.
    eventually(
        "the 300 ms lock runs out and the job goes",
        WAIT,
        || async { ahead.remove(&short, true).await.unwrap() },
    )
    .await;
    assert_eq!(ctx.state(&short).await, None);
    assert_eq!(ctx.state(&held).await, Some(JobState::Active));
}

/// A stalled check on a host whose clock runs ahead of the lock holder's by less than the
/// lock duration takes nothing back, however often it runs.
pub async fn a_checker_ahead_by_less_than_the_lock_takes_nothing<S: Store>() {
    // One second short of the 30 s lock's end at the holder's clock.
    checks_ahead_take_nothing::<S>("skew-stalled", 29_000).await;
}

/// A job held with a 30 s lock at the holder's clock, then three stalled checks on a host
/// `ahead_ms` ahead of it: none takes it back, and it stays active.
pub(crate) async fn checks_ahead_take_nothing<S: Store>(queue: &str, ahead_ms: u64) {
    let ctx = Ctx::<S>::new(queue).await;
    let start = now_ms();
    let holder = queue_at(&ctx, &ManualClock::new(start)).await;
    let id = add_and_hold(&holder, "a", "t", Duration::from_secs(30)).await;
    let clock = ManualClock::new(start + ahead_ms);
    let checker = queue_at(&ctx, &clock).await;
    let check = StalledCheck {
        max_stalled_count: 1,
        stalled_interval: Duration::from_millis(1),
    };
    for _ in 0..3 {
        // Each pass a little later, past the previous pass's throttle (Redis's is a key
        // that expires after 1 ms of the server's time).
        clock.advance(Duration::from_millis(200));
        tokio::time::sleep(Duration::from_millis(5)).await;
        let taken = checker
            .backend()
            .move_stalled_jobs_to_wait(&check)
            .await
            .unwrap();
        assert!(taken.is_empty(), "took {taken:?}");
    }
    assert_eq!(ctx.state(&id).await, Some(JobState::Active));
}

/// A long job on a worker 0.5 s behind, its 4 s lock renewed every second, is not taken back by a worker
/// 0.5 s ahead running the stalled check every 200 ms: it runs once and completes.
pub async fn renewed_locks_survive_a_skewed_stalled_check<S: Store>() {
    let ctx = Ctx::<S>::new("skew-renew").await;
    let id = ctx.add_with("long", JobOptions::new()).await;
    let runs = Arc::new(Mutex::new(0_u32));
    let counted = runs.clone();
    let lock = Duration::from_secs(4);
    let holder = Worker::new(
        ctx.name.clone(),
        ctx.store
            .backend_at(&ctx.name, &OffsetClock::new(-500))
            .await,
        fast()
            .lock_duration(lock)
            .lock_renew_time_of(Duration::from_secs(1))
            .skip_stalled_check(true),
        move |_job, _| {
            let counted = counted.clone();
            async move {
                *counted.lock().unwrap() += 1;
                // Longer than the lock: only its renewals keep it.
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(json!("done"))
            }
        },
    )
    .await
    .unwrap();
    ctx.wait_state(&id, JobState::Active).await;
    let checker = Worker::new(
        ctx.name.clone(),
        ctx.store
            .backend_at(&ctx.name, &OffsetClock::new(500))
            .await,
        fast()
            .lock_duration(lock)
            .stalled_interval(Duration::from_millis(200))
            .max_stalled_count(0),
        |_job, _| async { Ok(json!("stolen")) },
    )
    .await
    .unwrap();
    ctx.wait_state(&id, JobState::Completed).await;
    checker.close().await;
    holder.close().await;
    let job = ctx.job(&id).await;
    assert_eq!(job.return_value.as_deref(), Some("\"done\""));
    assert_eq!((job.attempts_started, job.stalled_counter), (1, 0));
    assert_eq!(*runs.lock().unwrap(), 1);
}

/// A delayed job is due at the producer's clock plus the delay, and runs when the worker's
/// clock reaches that: early by as much as the worker runs ahead of the producer, late by as
/// much as it runs behind. Never before its due time at the worker's clock.
pub async fn a_delay_is_due_at_the_producers_clock<S: Store>() {
    let ctx = Ctx::<S>::new("skew-delay").await;
    let delay = Duration::from_secs(30);
    // A producer 30 s behind: its 30 s delay is due now at the worker's clock.
    let behind = queue_at(&ctx, &OffsetClock::new(-30_000)).await;
    let early = add_delayed(&behind, "early", delay).await.id;
    // A producer 2 s ahead: its 1 s delay is due 3 s from now at the worker's clock.
    let ahead = queue_at(&ctx, &OffsetClock::new(2_000)).await;
    let late = add_delayed(&ahead, "late", Duration::from_secs(1)).await.id;
    let worker = ctx.worker(fast(), |_job, _| async { Ok(json!(1)) }).await;
    ctx.wait_state(&early, JobState::Completed).await;
    ctx.wait_state(&late, JobState::Completed).await;
    worker.close().await;
    for (id, delay) in [(&early, delay), (&late, Duration::from_secs(1))] {
        let job = ctx.job(id).await;
        let due = job.timestamp + u64::try_from(delay.as_millis()).unwrap();
        let started = job.processed_on.expect("processed");
        assert!(started >= due, "{id} started at {started}, due at {due}");
    }
    // The early one ran before its delay had passed in real time (the worker's clock is the
    // real one here), by the producer's skew.
    let early = ctx.job(&early).await;
    assert!(early.processed_on.unwrap() < early.timestamp + 30_000 + 30_000);
}

/// Two producers 2 s apart upsert one `every` scheduler, and two workers 2 s apart run it:
/// every iteration keeps to the schedule's grid, and none runs twice. (The second upsert
/// replaces the first's pending iteration, as any upsert does.)
pub async fn skewed_producers_and_workers_run_each_iteration_once<S: Store>() {
    let ctx = Ctx::<S>::new("skew-sched").await;
    let every = RepeatOptions {
        every: Some(Duration::from_millis(500)),
        ..RepeatOptions::default()
    };
    for offset in [1_000, -1_000] {
        let schedulers = JobScheduler::new(
            ctx.store
                .backend_at(&ctx.name, &OffsetClock::new(offset))
                .await,
        );
        schedulers
            .upsert("tick", &every, JobTemplate::named("tick"))
            .await
            .unwrap();
    }
    let seen: Arc<Mutex<Vec<JobId>>> = Arc::default();
    let mut workers = Vec::new();
    for offset in [1_000, -1_000] {
        let log = seen.clone();
        let backend = ctx
            .store
            .backend_at(&ctx.name, &OffsetClock::new(offset))
            .await;
        let opts: WorkerOptions = fast().concurrency(2);
        let worker = Worker::new(ctx.name.clone(), backend, opts, move |job, _| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(job.id.clone());
                Ok(json!(null))
            }
        })
        .await
        .unwrap();
        workers.push(worker);
    }
    eventually("six iterations", WAIT, || async {
        seen.lock().unwrap().len() >= 6
    })
    .await;
    for worker in workers {
        worker.close().await;
    }
    let seen = seen.lock().unwrap().clone();
    let mut slots: Vec<u64> = seen
        .iter()
        .map(|id| {
            id.as_str()
                .strip_prefix("repeat:tick:")
                .unwrap_or_else(|| panic!("{id} is no iteration"))
                .parse()
                .unwrap()
        })
        .collect();
    slots.sort_unstable();
    let before = slots.len();
    slots.dedup();
    assert_eq!(slots.len(), before, "an iteration ran twice: {seen:?}");
    // On the schedule's 500 ms grid (a worker ahead may skip a slot, as upstream's catch-up
    // does), never two runs of one slot.
    for pair in slots.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= 500 && gap % 500 == 0, "{slots:?}");
    }
}
