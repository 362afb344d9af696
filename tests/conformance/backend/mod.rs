//! The `Backend` trait's sections, case by case, on every store: one file per section
//! (`bullmq-core/src/backend/<section>.rs`), each case a generic function run once on Redis and
//! once on PostgreSQL by `main.rs`. Jobs are made and moved only through the trait, with time
//! stopped on a [`ManualClock`], and read back only through it; what a store writes byte for
//! byte (Redis keys and hash fields, SQL rows, Node.js twins) is checked beside the store's
//! own crate (`bullmq-redis/tests/store/`, `bullmq-postgres/tests/store/`).

pub mod add;
pub mod admin;
pub mod blocking;
pub mod events;
pub mod lifecycle;
pub mod locks;
pub mod meta;
pub mod mutations;
pub mod queries;
pub mod schedulers;
pub mod transitions;

use crate::support::finishing;
use crate::support::held::fetch_params;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bullmq::{FlowJob, FlowProducer};
use bullmq_core::backend::{
    CompleteArgs, EventId, Events, FailArgs, FetchParams, LockToken, Locks, Transitions,
    WorkerSettings,
};
use bullmq_core::clock::ManualClock;
use bullmq_core::options::KeepJobs;
use bullmq_core::{
    Error, Job, JobId, JobOptions, JobState, Queue, QueueName, ScriptError, ScriptErrorCode,
};
use serde_json::json;

use crate::store::Store;

/// Where the stopped clock starts (2023-11-14T22:13:20Z).
pub const T0: u64 = 1_700_000_000_000;

/// The lock the cases take jobs with.
pub const LOCK: Duration = Duration::from_secs(30);

/// One case's store, its queue `q` on a backend with a stopped clock, and the queue's handle.
pub struct Sec<S: Store> {
    pub store: S,
    pub b: S::B,
    pub queue: Queue<S::B>,
    pub clock: ManualClock,
}

impl<S: Store> Sec<S> {
    pub async fn new() -> Self {
        let store = S::isolated().await;
        let clock = ManualClock::new(T0);
        let name = QueueName::new("q").unwrap();
        let b = store.backend_at(&name, &clock).await;
        let queue = Queue::try_new(name, b.clone()).expect("the backend is bound to this queue");
        Self {
            store,
            b,
            queue,
            clock,
        }
    }

    /// Queue `name` of the same store, on a backend of its own with the same clock.
    pub async fn sibling(&self, name: &str) -> Queue<S::B> {
        let name = QueueName::new(name).unwrap();
        let b = self.store.backend_at(&name, &self.clock).await;
        Queue::try_new(name, b).expect("the backend is bound to this queue")
    }

    /// Whether `token` holds `job`'s lock: extending it by `by` succeeds.
    pub async fn extends(&self, job: &JobId, token: &str, by: Duration) -> bool {
        self.b
            .extend_lock(job, &LockToken::new(token), by)
            .await
            .unwrap()
    }

    /// Adds a job named `name` with data `{}`.
    pub async fn add(&self, name: &str, opts: JobOptions) -> Job {
        self.queue.add(name, &json!({}), opts).await.unwrap()
    }

    /// Adds job `id` named `job` with data `{"n": id}`.
    pub async fn add_id(&self, id: &str, opts: JobOptions) -> JobId {
        self.queue
            .add("job", &json!({ "n": id }), opts.job_id(id))
            .await
            .unwrap()
            .id
    }

    /// Parent `parent` of this queue waiting for its children `(id, options)` of queue `kids`
    /// (this queue or another of the store), added as one flow.
    pub async fn family(&self, parent: &str, kids: &str, children: &[(&str, JobOptions)]) {
        let q = |name: &str| QueueName::new(name).unwrap();
        let children = children.iter().map(|(child, opts)| {
            FlowJob::new(q(kids), "child", json!({ "n": child })).opts(opts.clone().job_id(*child))
        });
        let tree = FlowJob::new(q("q"), "parent", json!({}))
            .opts(JobOptions::new().job_id(parent))
            .children(children);
        FlowProducer::new(self.b.clone()).add(tree).await.unwrap();
    }

    /// Takes the next job with `token`; it must exist and decode.
    pub async fn take(&self, token: &str) -> Job {
        take_from(&self.b, token).await
    }

    pub async fn state(&self, id: &JobId) -> Option<JobState> {
        use bullmq_core::backend::Queries;
        self.b.get_state(id).await.unwrap()
    }

    /// The job as the store reads it back.
    pub async fn job(&self, id: &JobId) -> Job {
        use bullmq_core::backend::Queries;
        self.b.get_job(id).await.unwrap().expect("the job exists")
    }

    /// Takes the next job (which must be `job`) and completes it with `value`.
    /// Adds job "a", takes it with token "tok" and completes it with `value`, `keep` its
    /// retention: the job as taken.
    pub async fn a_completed(&self, value: &str, keep: KeepJobs) -> Job {
        let added = self.add("a", JobOptions::new()).await;
        let job = self.take("tok").await;
        assert_eq!(job.id, added.id);
        self.b
            .move_to_completed(&job, &complete_args("tok", value, keep, false))
            .await
            .unwrap();
        job
    }

    pub async fn complete(&self, job: &JobId, value: &str) {
        complete_on(&self.b, job, value).await;
    }

    /// Takes the next job (which must be `job`) and fails it with `reason`.
    pub async fn fail(&self, job: &JobId, reason: &str) {
        fail_on(&self.b, job, reason).await;
    }

    /// Adds each job `(id, completes)` in turn and finishes it, completed with `value` or failed
    /// with "boom", one second of the clock apart.
    pub async fn finish_in_turn(&self, jobs: &[(&str, bool)], value: &str) {
        for &(job, completes) in jobs {
            let job = self.add_id(job, JobOptions::new()).await;
            if completes {
                self.complete(&job, value).await;
            } else {
                self.fail(&job, "boom").await;
            }
            self.clock.advance(Duration::from_secs(1));
        }
    }

    /// The queue's events named `name`, oldest first, each as its fields.
    pub async fn events_named(&self, name: &str) -> Vec<HashMap<String, String>> {
        events_of(&self.b)
            .await
            .into_iter()
            .filter(|e| e.get("event").map(String::as_str) == Some(name))
            .collect()
    }

    /// The only event named `name`, which must be about job `id` and say it came from `prev`.
    pub async fn only_event(&self, name: &str, id: &JobId, prev: &str) -> HashMap<String, String> {
        let mut events = self.events_named(name).await;
        assert_eq!(events.len(), 1, "{name}: {events:?}");
        let event = events.remove(0);
        assert_eq!(event["jobId"], id.as_str(), "{name}");
        assert_eq!(event["prev"], prev, "{name}");
        event
    }
}

/// Every event of `b`'s queue, oldest first, each as its fields: read up to the newest id
/// the store reports (PostgreSQL hands out events only once every earlier one has committed).
pub async fn events_of<B: Events>(b: &B) -> Vec<HashMap<String, String>> {
    let newest = b.last_event_id().await.unwrap();
    let mut after = EventId::new("0");
    let mut all = Vec::new();
    loop {
        // Returns as soon as an event is there; only an empty stream waits the whole block.
        let batch = b.read_events(&after, Duration::from_secs(2)).await.unwrap();
        let Some(last) = batch.last() else {
            assert!(all.is_empty(), "the events up to {newest} stay readable");
            break;
        };
        after = last.id.clone();
        let done = batch.iter().any(|e| e.id == newest);
        all.extend(batch.into_iter().map(|e| e.fields.into_iter().collect()));
        if done {
            break;
        }
    }
    all
}

/// Takes the next job of `b` (which must be `job`) and completes it with `value`.
pub async fn complete_on<B: Transitions>(b: &B, job: &JobId, value: &str) {
    let taken = take_from(b, "done").await;
    assert_eq!(&taken.id, job);
    b.move_to_completed(
        &taken,
        &complete_args("done", value, KeepJobs::KeepAll, false),
    )
    .await
    .unwrap();
}

/// Takes the next job of `b` (which must be `job`) and fails it with `reason`.
pub async fn fail_on<B: Transitions>(b: &B, job: &JobId, reason: &str) {
    let taken = take_from(b, "done").await;
    assert_eq!(&taken.id, job);
    let mut args = fail_args("done", KeepJobs::KeepAll, false);
    args.failed_reason = reason.to_owned();
    args.fields.failed_reason = Some(reason.to_owned());
    b.move_to_failed(&taken, &args).await.unwrap();
}

/// Takes the next job of `b` with `token`; it must exist and decode.
pub async fn take_from<B: Transitions>(b: &B, token: &str) -> Job {
    let next = b.move_to_active(&fetch(token)).await.unwrap();
    let fetched = next.job.expect("a job to take");
    let job = fetched.job.expect("the job decodes");
    assert_eq!(job.id, fetched.id);
    job
}

/// A worker named `w1` taking jobs with `token` for [`LOCK`].
pub fn fetch(token: &str) -> FetchParams {
    fetch_params(token, LOCK, Some("w1"))
}

/// The settings of the worker [`fetch`] describes, as its finishing moves send them.
pub fn worker() -> Arc<WorkerSettings> {
    Arc::new(WorkerSettings {
        name: Some("w1".to_owned()),
        lock_duration: Some(LOCK),
        ..WorkerSettings::default()
    })
}

pub fn complete_args(token: &str, value: &str, keep: KeepJobs, fetch_next: bool) -> CompleteArgs {
    CompleteArgs {
        keep,
        worker: worker(),
        fetch_next,
        ..finishing::complete_args(token, value)
    }
}

/// Fails with `boom` and a one-frame stack trace ([`finishing::STACK`]).
pub fn fail_args(token: &str, keep: KeepJobs, fetch_next: bool) -> FailArgs {
    FailArgs {
        keep,
        worker: worker(),
        fetch_next,
        ..finishing::fail_args(token)
    }
}

/// The script refusal inside `err`.
pub fn script(err: Error) -> ScriptError {
    match err {
        Error::Script(e) => e,
        other => panic!("expected a script refusal, got {other:?}"),
    }
}

/// The script refusal `result` must be: `code`, from `command`.
pub fn refused<T: std::fmt::Debug>(
    result: bullmq_core::Result<T>,
    code: ScriptErrorCode,
    command: &str,
) -> ScriptError {
    let err = script(result.expect_err("a script refusal"));
    assert_eq!((err.code, err.command), (code, command), "{err}");
    err
}

/// [`refused`] as [`ScriptErrorCode::JobNotFound`] by `command`, about job "nope".
pub fn nope_not_found<T: std::fmt::Debug>(result: bullmq_core::Result<T>, command: &str) {
    let err = refused(result, ScriptErrorCode::JobNotFound, command);
    assert_eq!(err.job_id.as_deref(), Some("nope"), "{command}");
}

pub fn id(s: &str) -> JobId {
    JobId::from(s)
}

pub fn token(t: &str) -> LockToken {
    LockToken::new(t)
}
