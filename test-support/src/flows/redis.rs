//! What the Redis flow tests share (`tests/redis/flow.rs`, `tests/interop/redis_flow.rs`): a
//! context per test (unique prefix, connections, workers) and the tree written as the JSON
//! both runtimes' `getFlow` are compared in.

use std::future::Future;
use std::time::Duration;

use bullmq_core::codec::{self, KeyStyle};
use bullmq_core::worker::{
    ActiveJob, CancellationToken, ProcessResult, Processor, Worker, WorkerOptions,
};
use bullmq_core::{Job, JobId, JobState, Prefix, Queue, QueueName};
use bullmq_flow::{FlowProducer, JobNode};
use bullmq_redis::{RedisBackend, RedisOptions};
use serde_json::{Value, json};

use crate::standard_flow_processor as standard;

/// One test's key prefix (deleted on drop) and the connections made under it.
pub struct Ctx {
    /// The prefix, as text.
    pub prefix: String,
    _guard: crate::PrefixGuard,
}

impl Default for Ctx {
    fn default() -> Self {
        Self::new()
    }
}

impl Ctx {
    /// A fresh prefix.
    pub fn new() -> Self {
        let prefix = crate::unique_prefix();
        Self {
            _guard: crate::PrefixGuard(prefix.clone()),
            prefix,
        }
    }

    /// The prefix.
    pub fn prefix(&self) -> Prefix {
        Prefix::new(&self.prefix).unwrap()
    }

    /// A second prefix under this test's own, so that the guard deletes it too.
    pub fn other_prefix(&self) -> Prefix {
        Prefix::new(format!("{}:other", self.prefix)).unwrap()
    }

    /// A backend for `queue` under `prefix`.
    pub async fn backend_in(&self, prefix: &Prefix, queue: &str) -> RedisBackend {
        let options = RedisOptions::new(crate::redis_url()).prefix(prefix.clone());
        RedisBackend::connect(&options, q(queue)).await.unwrap()
    }

    /// A backend for `queue` under this test's prefix.
    pub async fn backend(&self, queue: &str) -> RedisBackend {
        self.backend_in(&self.prefix(), queue).await
    }

    /// A flow producer under this test's prefix.
    pub async fn producer(&self) -> FlowProducer<RedisBackend> {
        FlowProducer::new(self.backend("any").await)
    }

    /// Queue `name` under this test's prefix.
    pub async fn queue(&self, name: &str) -> Queue<RedisBackend> {
        Queue::try_new(q(name), self.backend(name).await)
            .expect("the backend is bound to this queue")
    }

    /// Queue `name` under `prefix`.
    pub async fn queue_in(&self, prefix: &Prefix, name: &str) -> Queue<RedisBackend> {
        Queue::try_new(q(name), self.backend_in(prefix, name).await)
            .expect("the backend is bound to this queue")
    }

    /// The state of job `id` of `queue`.
    pub async fn state(&self, queue: &str, id: &JobId) -> Option<JobState> {
        self.queue(queue)
            .await
            .job(id.clone())
            .get_state()
            .await
            .unwrap()
    }

    /// Waits until job `id` of `queue` is in `state`.
    pub async fn wait_state(&self, queue: &str, id: &JobId, state: JobState) {
        let queue_ = self.queue(queue).await;
        eventually(&format!("job {id} of {queue} {state:?}"), || async {
            queue_.job(id.clone()).get_state().await.unwrap() == Some(state)
        })
        .await;
    }

    /// Job `id` of `queue`, which must exist.
    pub async fn job(&self, queue: &str, id: &JobId) -> Job {
        self.queue(queue).await.get_job(id).await.unwrap().unwrap()
    }

    /// Waits for job `id` of `queue` to complete, then its return value.
    pub async fn completed_value(&self, queue: &str, id: &JobId) -> Value {
        self.wait_state(queue, id, JobState::Completed).await;
        self.job(queue, id)
            .await
            .return_value_as()
            .unwrap()
            .unwrap()
    }

    /// A Rust worker on `queue` running [`standard`].
    pub async fn worker(&self, queue: &str) -> impl Sized + use<> {
        self.worker_with(queue, standard).await
    }

    /// A Rust worker on `queue` running `f`, four jobs at a time.
    pub async fn worker_with<F, Fut>(&self, queue: &str, f: F) -> Closing<F>
    where
        F: Fn(ActiveJob<RedisBackend>, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ProcessResult> + Send,
    {
        let worker = Worker::new(
            q(queue),
            self.backend(queue).await,
            WorkerOptions::new().concurrency(4),
            f,
        )
        .await
        .unwrap();
        Closing(Some(worker))
    }
}

/// A worker closed (without waiting) when dropped.
pub struct Closing<F: Processor<RedisBackend>>(pub Option<Worker<RedisBackend, F>>);

impl<F: Processor<RedisBackend>> Drop for Closing<F> {
    fn drop(&mut self) {
        if let Some(worker) = self.0.take() {
            tokio::spawn(async move { worker.close_force().await });
        }
    }
}

/// A queue name.
pub fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

/// A tree as the flow tests compare it across runtimes: per node its qualified queue name,
/// id, name, data, options (long names), parent fields and return value, then its children.
pub fn norm(node: &JobNode) -> Value {
    let job = &node.job;
    let parse = |text: &Option<String>| {
        text.as_deref()
            .map_or(Value::Null, |t| serde_json::from_str(t).unwrap())
    };
    json!({
        "queue": format!("{}:{}", node.prefix.as_str(), node.queue.as_str()),
        "id": job.id.as_str(),
        "name": job.name,
        "data": serde_json::from_str::<Value>(&job.data).unwrap(),
        "opts": codec::options_to_value(&job.opts, KeyStyle::Long),
        "timestamp": job.timestamp,
        "parentKey": job.parent_key,
        "parent": job.parent.as_ref().map(|p| serde_json::to_value(p).unwrap()),
        "returnvalue": parse(&job.return_value),
        "children": node.children.iter().map(norm).collect::<Vec<_>>(),
    })
}

/// Polls `check` until it holds, for up to 30 s.
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    crate::eventually(what, Duration::from_secs(30), check).await;
}
