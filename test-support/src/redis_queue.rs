//! One queue under its own prefix on a Redis server, and the moves the Redis worker tests
//! (`tests/redis/worker.rs`, `tests/faults/redis_worker.rs`) make on it.

use std::future::Future;
use std::time::Duration;

use bullmq_core::clock::ManualClock;
use bullmq_core::worker::{ActiveJob, CancellationToken, ProcessResult, Worker, WorkerOptions};
use bullmq_core::{Job, JobId, JobState, Prefix, Queue, QueueName};
use bullmq_redis::{RedisBackend, RedisOptions};

use crate::PrefixGuard;
use crate::wait::eventually;

/// How long [`RedisQueue::wait_state`] waits.
const WAIT: Duration = Duration::from_secs(20);

/// A queue under a fresh prefix, and a producer on it.
pub struct RedisQueue {
    /// The server's URL.
    pub url: String,
    /// The key prefix.
    pub prefix: String,
    /// The queue's name.
    pub name: QueueName,
    /// A producer on the queue.
    pub queue: Queue<RedisBackend>,
    _guard: Option<PrefixGuard>,
}

impl RedisQueue {
    /// On the shared server; its keys are removed when it drops.
    pub async fn shared(queue: &str) -> Self {
        let prefix = crate::unique_prefix();
        let guard = PrefixGuard(prefix.clone());
        Self::build(crate::redis_url(), prefix, Some(guard), queue, None).await
    }

    /// On the shared server, its producer reading the time from `clock` (the connections of
    /// [`RedisQueue::connect`] read the system's); its keys are removed when it drops.
    pub async fn shared_on_clock(queue: &str, clock: ManualClock) -> Self {
        let prefix = crate::unique_prefix();
        let guard = PrefixGuard(prefix.clone());
        Self::build(crate::redis_url(), prefix, Some(guard), queue, Some(clock)).await
    }

    /// On the server at `url` (a private one, thrown away with its keys).
    pub async fn on(url: String, queue: &str) -> Self {
        Self::build(url, crate::unique_prefix(), None, queue, None).await
    }

    async fn build(
        url: String,
        prefix: String,
        guard: Option<PrefixGuard>,
        queue: &str,
        clock: Option<ManualClock>,
    ) -> Self {
        let name = QueueName::new(queue).unwrap();
        let mut backend = connect(&url, &prefix, &name).await;
        if let Some(clock) = clock {
            backend = backend.with_clock(clock);
        }
        Self {
            queue: Queue::try_new(name.clone(), backend)
                .expect("the backend is bound to this queue"),
            url,
            prefix,
            name,
            _guard: guard,
        }
    }

    /// A fresh connection (a worker closes the backend it is given).
    pub async fn connect(&self) -> RedisBackend {
        connect(&self.url, &self.prefix, &self.name).await
    }

    /// A worker on the queue running `f`, on a connection of its own.
    pub async fn worker<F, Fut>(&self, opts: WorkerOptions, f: F) -> Worker<RedisBackend, F>
    where
        F: Fn(ActiveJob<RedisBackend>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ProcessResult> + Send,
    {
        Worker::new(self.name.clone(), self.connect().await, opts, f)
            .await
            .unwrap()
    }

    /// The state of job `id`; `None` when it has none or cannot be read (the server may be
    /// down in a fault test).
    pub async fn state(&self, id: &JobId) -> Option<JobState> {
        self.queue.job(id.clone()).get_state().await.ok().flatten()
    }

    /// Job `id`, which must exist.
    pub async fn job(&self, id: &JobId) -> Job {
        self.queue.get_job(id).await.unwrap().unwrap()
    }

    /// Waits until job `id` is in `state`.
    pub async fn wait_state(&self, id: &JobId, state: JobState) {
        eventually(&format!("job {id} {state:?}"), WAIT, || async {
            self.state(id).await == Some(state)
        })
        .await;
    }
}

async fn connect(url: &str, prefix: &str, name: &QueueName) -> RedisBackend {
    let options = RedisOptions::new(url).prefix(Prefix::new(prefix).unwrap());
    RedisBackend::connect(&options, name.clone()).await.unwrap()
}
