//! What every case starts from: a store of its own, one queue on it, and helpers to add,
//! read and wait.

use crate::support::held::fetch_params;
use std::time::Duration;

use bullmq::backend::{Backend, Lifecycle, Transitions};
use bullmq::job::JobType;
use bullmq::{
    ActiveJob, CancellationToken, Job, JobId, JobOptions, JobState, ProcessResult, Queue,
    QueueName, Worker, WorkerOptions,
};
use serde_json::{Value, json};

use crate::store::Store;
use crate::support::eventually;

/// How long a case waits for a state or an event before failing.
pub const WAIT: Duration = Duration::from_secs(20);

/// A store, a queue named after the case, and the queue's handle.
pub struct Ctx<S: Store> {
    pub store: S,
    pub name: QueueName,
    pub queue: Queue<S::B>,
}

impl<S: Store> Ctx<S> {
    pub async fn new(queue: &str) -> Self {
        let store = S::isolated().await;
        let name = QueueName::new(queue).unwrap();
        let queue = Queue::try_new(name.clone(), store.backend(&name).await)
            .expect("the backend is bound to this queue");
        Self { store, name, queue }
    }

    /// A new backend for the queue (a worker or reader closes the one it is given).
    pub async fn backend(&self) -> S::B {
        self.store.backend(&self.name).await
    }

    pub async fn add(&self, name: &str, data: Value, opts: JobOptions) -> JobId {
        self.queue.add(name, &data, opts).await.unwrap().id
    }

    /// [`Ctx::add`] with data `{}`: for the cases where only the name and options matter.
    pub async fn add_with(&self, name: &str, opts: JobOptions) -> JobId {
        self.add(name, json!({}), opts).await
    }

    /// Adds `n` jobs named `name`, with data `{"i": 0}`, `{"i": 1}`, ...; their ids in order.
    pub async fn add_numbered(&self, name: &str, n: usize) -> Vec<JobId> {
        let mut ids = Vec::with_capacity(n);
        for i in 0..n {
            ids.push(self.add(name, json!({ "i": i }), JobOptions::new()).await);
        }
        ids
    }

    pub async fn job(&self, id: &JobId) -> Job {
        self.queue.get_job(id).await.unwrap().unwrap()
    }

    /// Waits (within [`WAIT`]) until every job of `ids` is removed; `what` names them.
    pub async fn wait_removed(&self, what: &str, ids: &[&JobId]) {
        eventually(&format!("{what} removed"), WAIT, || async {
            for id in ids {
                if self.queue.get_job(id).await.unwrap().is_some() {
                    return false;
                }
            }
            true
        })
        .await;
    }

    pub async fn state(&self, id: &JobId) -> Option<JobState> {
        self.queue.get_job_state(id).await.unwrap()
    }

    pub async fn wait_state(&self, id: &JobId, state: JobState) {
        eventually(&format!("job {id} {state:?}"), WAIT, || async {
            self.state(id).await == Some(state)
        })
        .await;
    }

    /// The queue `name` in the same store, on a backend of its own.
    pub async fn other(&self, name: &str) -> Queue<S::B> {
        let name = q(name);
        Queue::try_new(name.clone(), self.store.backend(&name).await)
            .expect("the backend is bound to this queue")
    }

    /// The key (PostgreSQL: `<queue>:<id>`, Redis: `<prefix>:<queue>:<id>`) of job `id` of
    /// `queue`, as parents and children name each other.
    pub fn key_in(queue: &Queue<S::B>, id: &JobId) -> String {
        queue.backend().to_key(id.as_str())
    }

    /// The key of job `id` of this case's queue.
    pub fn key(&self, id: &JobId) -> String {
        Self::key_in(&self.queue, id)
    }

    /// How many jobs are in `state`.
    pub async fn count_in(&self, state: JobState) -> u64 {
        self.queue
            .get_job_count_by_types(&[JobType::State(state)])
            .await
            .unwrap()
    }

    /// Takes the next job with `token` (locked for `lock`), as a worker would; its id.
    pub async fn take_for(&self, token: &str, lock: Duration) -> Option<JobId> {
        let fetch = fetch_params(token, lock, None);
        let next = self.queue.backend().move_to_active(&fetch).await.unwrap();
        next.job.map(|j| j.id)
    }

    /// Takes the next job with `token` for 30 s.
    pub async fn take(&self, token: &str) -> JobId {
        self.take_for(token, Duration::from_secs(30))
            .await
            .expect("a job is ready")
    }

    /// A running worker on a backend of its own.
    pub async fn worker<F, Fut>(&self, opts: WorkerOptions, f: F) -> Worker<S::B, F>
    where
        F: Fn(ActiveJob<S::B>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ProcessResult> + Send,
        S::B: Backend,
    {
        Worker::new(self.name.clone(), self.backend().await, opts, f)
            .await
            .unwrap()
    }
}

/// A processor's future, boxed so that a helper's processor has a type to name.
pub type BoxFut = std::pin::Pin<Box<dyn Future<Output = ProcessResult> + Send>>;

/// A processor whose every job works for `work` (a sleep: longer than a lock or a timeout,
/// in the cases that use it), then returns `"kept"`.
pub fn working_for<B: Send + 'static>(
    work: Duration,
) -> impl Fn(ActiveJob<B>, CancellationToken) -> BoxFut + Send + Sync + 'static {
    move |_job, _| {
        Box::pin(async move {
            tokio::time::sleep(work).await;
            Ok(json!("kept"))
        })
    }
}

/// A worker on queue `name` of `ctx`'s store.
pub async fn worker_on<S, F, Fut>(
    ctx: &Ctx<S>,
    name: &str,
    opts: WorkerOptions,
    f: F,
) -> Worker<S::B, F>
where
    S: Store,
    F: Fn(ActiveJob<S::B>, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ProcessResult> + Send,
{
    let name = q(name);
    Worker::new(name.clone(), ctx.store.backend(&name).await, opts, f)
        .await
        .unwrap()
}

/// Options that deduplicate on `id` for as long as its job is neither completed nor failed.
pub fn dedup_on(id: &str) -> JobOptions {
    JobOptions::new().deduplication(bullmq::Deduplication::new(id))
}

/// A queue name.
pub fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    crate::support::now_ms()
}

/// Worker options for tests: a short drain delay so idle workers notice new work quickly.
pub fn fast() -> WorkerOptions {
    WorkerOptions::new().drain_delay(Duration::from_millis(500))
}
