//! [`WorkerPool`]: N workers on one queue, run as a unit: scaled at run time, supervised (a
//! worker that stops on its own is restarted with a back-off, within a restart budget), and
//! closed gracefully together. What the Elixir port's users build with a supervisor and a
//! dynamic manager, done once.
//!
//! ```no_run
//! # async fn demo<B: bullmq_core::backend::Backend>(backend: B) -> bullmq_core::Result<()> {
//! use bullmq_core::pool::{Supervision, WorkerPool};
//! use bullmq_core::worker::{ActiveJob, CancellationToken, WorkerOptions};
//! use bullmq_core::Queue;
//!
//! let queue = Queue::from_backend(backend)?;
//! let pool = WorkerPool::builder(queue, |job: ActiveJob<B>, _: CancellationToken| async move {
//!     Ok(serde_json::json!({ "sent": job.id.to_string() }))
//! })
//! .options(WorkerOptions::new().concurrency(50))
//! .size(4)
//! .supervision(Supervision::default())
//! .build()
//! .await?;
//! pool.scale_to(8).await?; // more workers under load
//! assert_eq!(pool.size(), 8);
//! pool.close().await; // every worker closes gracefully
//! # Ok(()) }
//! ```

mod autoscale;
mod member;
mod supervision;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

pub use autoscale::{Autoscale, Autoscaler};
pub use supervision::Supervision;

use self::member::Member;
use self::supervision::RestartLog;
use crate::backend::Backend;
use crate::options::ValidationError;
use crate::telemetry::{ConnectionHealth, RunState};
use crate::worker::{Processor, Worker, WorkerOptions};
use crate::{Error, Queue, Result};

/// The most workers one pool runs (each holds a connection of its own).
pub const MAX_POOL_SIZE: usize = 1024;

/// Something that happened to a pool's workers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PoolEvent {
    /// The worker in place `index` started (first start or restart).
    Started {
        /// Its place in the pool.
        index: usize,
    },
    /// The worker in place `index` stopped on its own (or could not be built) and is
    /// restarted after `delay`.
    Restarting {
        /// Its place in the pool.
        index: usize,
        /// Why it stopped.
        error: Arc<Error>,
        /// The back-off before the restart.
        delay: Duration,
    },
    /// Place `index` was given up: its worker closed (scaled down, pool closed, or past the
    /// restart budget).
    Stopped {
        /// Its place in the pool.
        index: usize,
    },
    /// The restart budget was spent: the pool stops restarting and reports itself failed.
    Failed {
        /// The last worker's cause.
        error: Arc<Error>,
    },
    /// The pool was scaled.
    Scaled {
        /// Workers before.
        from: usize,
        /// Workers now.
        to: usize,
    },
}

/// A pool's health, for readiness and liveness probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolHealth {
    /// `Running`, `Failed` (past the restart budget), `Closing` or `Closed`.
    pub state: RunState,
    /// The places in the pool (its size).
    pub size: usize,
    /// Workers running now (fewer than `size` while some restart).
    pub running: usize,
    /// Jobs in progress, all workers together.
    pub active_jobs: usize,
    /// Jobs processed at once at most, all running workers together.
    pub concurrency: usize,
    /// Restarts within the supervision window.
    pub recent_restarts: usize,
    /// The workers' connections: healthy when every running worker's are.
    pub connection: ConnectionHealth,
}

impl PoolHealth {
    /// Live: not failed (a failed pool should be restarted, e.g. by Kubernetes).
    #[must_use]
    pub fn is_live(&self) -> bool {
        !matches!(self.state, RunState::Failed)
    }

    /// Ready for traffic: running with every place filled over healthy connections.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.state == RunState::Running && self.running == self.size && self.connection.healthy
    }
}

/// Builds a [`WorkerPool`].
pub struct WorkerPoolBuilder<B: Backend, P: Processor<B>> {
    queue: Queue<B>,
    processor: P,
    options: WorkerOptions,
    size: usize,
    supervision: Supervision,
}

impl<B: Backend, P: Processor<B>> WorkerPoolBuilder<B, P> {
    /// The options every worker of the pool gets (their `autorun` is ignored: the pool runs
    /// them).
    #[must_use]
    pub fn options(mut self, options: WorkerOptions) -> Self {
        self.options = options;
        self
    }

    /// How many workers to start with (1 by default).
    #[must_use]
    pub fn size(mut self, size: usize) -> Self {
        self.size = size;
        self
    }

    /// The restart policy ([`Supervision::default`] otherwise).
    #[must_use]
    pub fn supervision(mut self, supervision: Supervision) -> Self {
        self.supervision = supervision;
        self
    }

    /// Validates the options and starts the workers; returns once each has started (or its
    /// first start failed, which the supervision then retries).
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for bad worker options, supervision or size.
    pub async fn build(self) -> Result<WorkerPool<B, P>> {
        self.options.validate()?;
        self.supervision.validate()?;
        check_size(self.size)?;
        let (events, _) = broadcast::channel(256);
        let close_timeout = self.options.close_timeout;
        let inner = Arc::new(PoolInner {
            queue: self.queue,
            processor: Arc::new(self.processor),
            options: self.options.autorun(true),
            supervision: self.supervision,
            members: tokio::sync::Mutex::new(Vec::new()),
            size: Mutex::new(0),
            restarts: Mutex::new(RestartLog::default()),
            failure: Mutex::new(None),
            closing: AtomicBool::new(false),
            close_timeout: Mutex::new(close_timeout),
            events,
        });
        let pool = WorkerPool { inner };
        pool.scale_to(self.size).await?;
        Ok(pool)
    }
}

/// Workers on one queue run as a unit. See the [module docs](self).
///
/// Dropping a pool closes it in the background: each worker closes gracefully within its
/// `close_timeout`, as a dropped [`Worker`] does.
pub struct WorkerPool<B: Backend, P: Processor<B>> {
    inner: Arc<PoolInner<B, P>>,
}

impl<B: Backend, P: Processor<B>> std::fmt::Debug for WorkerPool<B, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool")
            .field("queue", self.inner.queue.name())
            .field("size", &self.size())
            .finish_non_exhaustive()
    }
}

/// What the pool's handle and its supervisors share.
pub(crate) struct PoolInner<B: Backend, P: Processor<B>> {
    pub(crate) queue: Queue<B>,
    processor: Arc<P>,
    pub(crate) options: WorkerOptions,
    pub(crate) supervision: Supervision,
    /// The places; locked across a whole scaling so that two never interleave.
    members: tokio::sync::Mutex<Vec<Member<B, P>>>,
    /// The number of places, readable without waiting for a scaling in progress.
    size: Mutex<usize>,
    restarts: Mutex<RestartLog>,
    failure: Mutex<Option<Arc<Error>>>,
    closing: AtomicBool,
    /// How long a closing worker may finish its jobs: the workers' `close_timeout`, or the
    /// deadline [`WorkerPool::close_timeout`] was given.
    close_timeout: Mutex<Duration>,
    events: broadcast::Sender<PoolEvent>,
}

impl<B: Backend, P: Processor<B>> PoolInner<B, P> {
    pub(crate) async fn build_worker(&self) -> Result<Worker<B, P>> {
        Worker::builder_shared(self.queue.duplicate(), Arc::clone(&self.processor))
            .options(self.options.clone())
            .build()
            .await
    }

    pub(crate) fn close_timeout(&self) -> Duration {
        *self
            .close_timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn emit(&self, event: PoolEvent) {
        let _ = self.events.send(event);
    }

    /// Counts a restart against the budget; false once it is spent.
    pub(crate) fn allow_restart(&self, now: Instant) -> bool {
        self.restarts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .allow(&self.supervision, now)
    }

    /// Records that the budget was spent on place `index`.
    pub(crate) fn fail(&self, index: usize, cause: &Arc<Error>) {
        tracing::error!(
            target: "bullmq",
            queue = %self.queue.name(),
            index,
            error = %cause,
            max_restarts = self.supervision.max_restarts,
            "worker pool failed: a worker kept stopping, past the restart budget"
        );
        crate::telemetry::metrics::pool_failed(self.queue.name().as_str());
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(cause));
        self.emit(PoolEvent::Failed {
            error: Arc::clone(cause),
        });
    }

    pub(crate) async fn scale(this: &Arc<Self>, n: usize) -> Result<()> {
        check_size(n)?;
        let mut members = this.members.lock().await;
        if this.closing.load(Ordering::SeqCst) {
            return Err(Error::Closed("worker pool"));
        }
        let from = members.len();
        if n > from {
            let mut started = Vec::with_capacity(n - from);
            for index in from..n {
                let (first, ready) = watch::channel(false);
                members.push(Member::start(this, index, first));
                started.push(ready);
            }
            this.set_size(n);
            for mut ready in started {
                let _ = ready.wait_for(|started| *started).await;
            }
        } else if n < from {
            let surplus: Vec<_> = members.drain(n..).collect();
            this.set_size(n);
            stop_all(surplus).await;
        }
        if n != from {
            tracing::info!(target: "bullmq", queue = %this.queue.name(), from, to = n, "worker pool scaled");
            this.emit(PoolEvent::Scaled { from, to: n });
        }
        // The pool's handle was dropped while this scaling held the places: stop them now,
        // or nothing would.
        if this.is_closing() {
            for member in members.iter() {
                member.stop.cancel();
            }
        }
        Ok(())
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    pub(crate) fn current_size(&self) -> usize {
        *self.size.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_size(&self, size: usize) {
        *self.size.lock().unwrap_or_else(PoisonError::into_inner) = size;
        crate::telemetry::metrics::pool_size(self.queue.name().as_str(), size);
    }
}

fn check_size(size: usize) -> Result<()> {
    if size > MAX_POOL_SIZE {
        return Err(ValidationError::single(
            "worker pool",
            "size",
            format!(
                "must be at most {MAX_POOL_SIZE} (got {size}): raise each worker's concurrency \
                 instead, or run more processes"
            ),
        )
        .into());
    }
    Ok(())
}

impl<B: Backend, P: Processor<B>> WorkerPool<B, P> {
    /// A builder for a pool on `queue` (its backend may be shared: each worker takes a
    /// [handle](crate::backend::Lifecycle::handle) of its own) running `processor` in every
    /// worker.
    pub fn builder(queue: Queue<B>, processor: P) -> WorkerPoolBuilder<B, P> {
        WorkerPoolBuilder {
            queue,
            processor,
            options: WorkerOptions::new(),
            size: 1,
            supervision: Supervision::default(),
        }
    }

    /// The pool's queue.
    #[must_use]
    pub fn queue(&self) -> &Queue<B> {
        &self.inner.queue
    }

    /// The number of places (workers running or restarting).
    #[must_use]
    pub fn size(&self) -> usize {
        *self
            .inner
            .size
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The pool's events; see [`PoolEvent`].
    #[must_use]
    pub fn events(&self) -> broadcast::Receiver<PoolEvent> {
        self.inner.events.subscribe()
    }

    /// The workers running now, for their events, health or job cancellation.
    pub async fn workers(&self) -> Vec<Arc<Worker<B, P>>> {
        self.inner
            .members
            .lock()
            .await
            .iter()
            .filter_map(Member::current)
            .collect()
    }

    /// Why the pool failed, once its restart budget was spent.
    #[must_use]
    pub fn failure(&self) -> Option<Arc<Error>> {
        self.inner
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Scales to `n` workers: new ones are started (this returns once each has started, or its
    /// first start failed), surplus ones (the newest first) close gracefully, their jobs in
    /// progress finishing within `close_timeout`. Scalings are applied one after the other.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] past [`MAX_POOL_SIZE`]; [`Error::Closed`] once the pool closes.
    pub async fn scale_to(&self, n: usize) -> Result<()> {
        PoolInner::scale(&self.inner, n).await
    }

    /// Sizes the pool by itself from the queue's scaling signals, as `policy` says (see
    /// [`Autoscale`]), until the returned [`Autoscaler`] is dropped or the pool closes.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for a bad policy; [`Error::Unsupported`] outside a Tokio runtime.
    pub fn autoscale(&self, policy: Autoscale) -> Result<Autoscaler> {
        policy.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::Unsupported {
            operation: "WorkerPool::autoscale outside a Tokio runtime",
            backend: "any",
        })?;
        Ok(Autoscaler::start(
            Arc::downgrade(&self.inner),
            policy,
            &runtime,
        ))
    }

    /// Adds `k` workers.
    ///
    /// # Errors
    ///
    /// As [`scale_to`](Self::scale_to).
    pub async fn scale_up(&self, k: usize) -> Result<()> {
        self.scale_to(self.size().saturating_add(k)).await
    }

    /// Removes `k` workers (at most all of them).
    ///
    /// # Errors
    ///
    /// As [`scale_to`](Self::scale_to).
    pub async fn scale_down(&self, k: usize) -> Result<()> {
        self.scale_to(self.size().saturating_sub(k)).await
    }

    /// The pool's state and its workers' together.
    pub async fn health(&self) -> PoolHealth {
        let workers = self.workers().await;
        let size = self.size();
        let mut connection = ConnectionHealth {
            healthy: true,
            last_ok_ms: None,
            consecutive_failures: 0,
        };
        let (mut active_jobs, mut concurrency) = (0, 0);
        for worker in &workers {
            let health = worker.health();
            active_jobs += health.active_jobs;
            concurrency += health.concurrency;
            connection.healthy &= health.connection.healthy;
            connection.consecutive_failures = connection
                .consecutive_failures
                .max(health.connection.consecutive_failures);
            connection.last_ok_ms = connection.last_ok_ms.max(health.connection.last_ok_ms);
        }
        let state = if self.failure().is_some() {
            RunState::Failed
        } else if self.inner.closing.load(Ordering::SeqCst) {
            if size == 0 {
                RunState::Closed
            } else {
                RunState::Closing
            }
        } else {
            RunState::Running
        };
        let recent_restarts = self
            .inner
            .restarts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recent(&self.inner.supervision, Instant::now());
        PoolHealth {
            state,
            size,
            running: workers.len(),
            active_jobs,
            concurrency,
            recent_restarts,
            connection,
        }
    }

    /// Closes every worker gracefully, together: each stops taking jobs and lets those in
    /// progress finish within the workers' `close_timeout` (past it, they are left to the
    /// stalled check). True when every job finished in time.
    pub async fn close(&self) -> bool {
        self.close_timeout(self.inner.options.close_timeout).await
    }

    /// [`close`](Self::close), with `timeout` instead of the workers' `close_timeout`.
    pub async fn close_timeout(&self, timeout: Duration) -> bool {
        self.inner.closing.store(true, Ordering::SeqCst);
        *self
            .inner
            .close_timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = timeout;
        let mut members = self.inner.members.lock().await;
        let all: Vec<_> = members.drain(..).collect();
        self.inner.set_size(0);
        stop_all(all).await
    }
}

/// Stops places together, so that closing N workers takes one close timeout, not N; true
/// when each finished its jobs in time.
async fn stop_all<B: Backend, P: Processor<B>>(members: Vec<Member<B, P>>) -> bool {
    let stops: Vec<_> = members
        .into_iter()
        .map(|m| {
            let index = m.index;
            let stopping = tokio::spawn(m.stop());
            (index, stopping)
        })
        .collect();
    let mut all_finished = true;
    for (index, stopping) in stops {
        match stopping.await {
            Ok(finished) => all_finished &= finished,
            Err(_) => {
                all_finished = false;
                tracing::warn!(target: "bullmq", index, "a pool worker's supervisor ended abnormally");
            }
        }
    }
    all_finished
}

impl<B: Backend, P: Processor<B>> Drop for WorkerPool<B, P> {
    fn drop(&mut self) {
        self.inner.closing.store(true, Ordering::SeqCst);
        // Each supervisor closes its worker gracefully once stopped. A scaling in progress
        // holds the places: it stops them itself when it sees the pool closing, and a task
        // stops them once it lets go, in case it looked just before.
        if let Ok(members) = self.inner.members.try_lock() {
            for member in members.iter() {
                member.stop.cancel();
            }
        } else if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let inner = Arc::clone(&self.inner);
            runtime.spawn(async move {
                for member in inner.members.lock().await.iter() {
                    member.stop.cancel();
                }
            });
        }
    }
}
