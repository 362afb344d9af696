//! [`Worker`]: processes a queue's jobs, alongside Node.js BullMQ workers on the same queue.
//!
//! It works as upstream's `Worker` does: a blocking wait on the queue's marker while the queue
//! is empty, `moveToActive`, and a finishing move that takes the next job in the same round
//! trip, so a busy worker makes one call per job. One timer renews every lock in a single
//! `extendLocks` call; a lock found lost cancels that job's token, and its late finish is
//! refused by the store (a [`ScriptError`](crate::ScriptError) event). The stalled-jobs check
//! runs on its interval. Every failure is reported as a [`WorkerEvent::Error`] and the worker
//! carries on; only [`close`](Worker::close) stops it.
//!
//! ```no_run
//! # async fn demo<B: bullmq_core::backend::Backend>(backend: B) -> bullmq_core::Result<()> {
//! use bullmq_core::QueueName;
//! use bullmq_core::worker::{ActiveJob, JobError, Worker, WorkerOptions};
//! use tokio_util::sync::CancellationToken;
//!
//! #[derive(serde::Deserialize)]
//! struct Email { to: String }
//!
//! let worker = Worker::new(
//!     QueueName::new("emails")?,
//!     backend,
//!     WorkerOptions::new().concurrency(10),
//!     |job: ActiveJob<B>, _cancel: CancellationToken| async move {
//!         let email: Email = job.data_as()?;
//!         job.update_progress(&50).await?;
//!         if email.to.is_empty() {
//!             return Err(JobError::unrecoverable("no recipient"));
//!         }
//!         Ok(serde_json::json!({ "sent": email.to }))
//!     },
//! )
//! .await?;
//! // … later
//! worker.close().await;
//! # Ok(()) }
//! ```

mod active_job;
mod boxed;
mod cancel;
mod close;
mod events;
mod failure_report;
mod fetch;
mod finish;
mod lock_tracker;
mod locks;
mod main_loop;
mod options;
mod processor;
mod shared;
mod stalled;
mod typed;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tracing::Instrument;

pub use crate::failed_attempt::BackoffFn;
pub use active_job::ActiveJob;
pub use boxed::BoxProcessor;
pub use cancel::CancelReason;
pub use events::WorkerEvent;
pub use options::WorkerOptions;
pub use processor::{JobError, ProcessResult, Processor, ReturnValue};
/// The token a processor gets, cancelled when its job's lock is lost or the worker is closed
/// with force (re-exported from `tokio-util`).
pub use tokio_util::sync::CancellationToken;
pub use typed::{Typed, typed};

use self::shared::Shared;
use crate::backend::{Backend, ClientRole, LockToken, WorkerSettings};
use crate::scheduling::RepeatStrategy;
use crate::telemetry::spans;
use crate::telemetry::{HealthTracker, RunState, WorkerHealth};
use crate::{Error, Job, JobRef, Queue, QueueName, Result};

/// Processes the jobs of one queue with `P`. See the [module docs](self).
///
/// Dropping a worker that was not closed closes it: it takes no job from then on, the jobs
/// in progress finish within [`WorkerOptions::close_timeout`] (those still running then are
/// left to the stalled check), and it leaves `getWorkers`.
pub struct Worker<B: Backend, P: Processor<B>> {
    shared: Arc<Shared<B>>,
    processor: Arc<P>,
}

impl<B: Backend, P: Processor<B>> Drop for Worker<B, P> {
    fn drop(&mut self) {
        close::on_drop(&self.shared);
    }
}

impl<B: Backend, P: Processor<B>> std::fmt::Debug for Worker<B, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("queue", self.shared.queue.name())
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Worker`] with custom backoff strategies.
pub struct WorkerBuilder<B, P> {
    queue: Queue<B>,
    processor: Arc<P>,
    options: WorkerOptions,
    backoffs: HashMap<String, BackoffFn>,
    repeat_strategy: Option<RepeatStrategy>,
}

impl<B: Backend, P: Processor<B>> WorkerBuilder<B, P> {
    /// Replaces how the next run of a cron-`pattern` job scheduler is computed when this worker
    /// takes one of its jobs (upstream: `settings.repeatStrategy`): given the time to start
    /// from (Unix ms), the schedule and the job name, it returns the next run, or `None` when
    /// the schedule has no more. Without one, the worker reads patterns as Node's default
    /// does ([`next_cron_millis`](crate::scheduling::next_cron_millis), cron-parser's semantics).
    /// `every` schedulers never use it.
    #[must_use]
    pub fn repeat_strategy(
        mut self,
        strategy: impl Fn(u64, &crate::scheduling::RepeatOptions, &str) -> Option<u64>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.repeat_strategy = Some(Arc::new(strategy));
        self
    }

    /// Sets the options.
    #[must_use]
    pub fn options(mut self, options: WorkerOptions) -> Self {
        self.options = options;
        self
    }

    /// Registers a custom backoff strategy, used by jobs whose `backoff.type` is `name`.
    #[must_use]
    pub fn backoff_strategy(
        mut self,
        name: impl Into<String>,
        strategy: impl Fn(u32, &Job, &str) -> Option<Duration> + Send + Sync + 'static,
    ) -> Self {
        self.backoffs.insert(name.into(), Arc::new(strategy));
        self
    }

    /// Validates the options, names the worker's connection (so `getWorkers()` in any runtime
    /// lists it) and, with `autorun`, starts processing.
    ///
    /// The worker works on a [handle](crate::backend::Lifecycle::handle) of its own on the
    /// queue's backend: several workers (and queues, event readers) may be built on one
    /// backend or its clones, each is listed by `getWorkers` under its own connection, and
    /// closing one closes only its own dedicated connection.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for bad options; a backend error when the connection fails.
    pub async fn build(self) -> Result<Worker<B, P>> {
        self.options.validate()?;
        let queue = self.queue.on_own_handle();
        let role = ClientRole::Worker {
            name: self.options.name.clone(),
        };
        queue.backend().set_client_role(role).await?;
        let autorun = self.options.autorun;
        let worker = Worker {
            shared: Arc::new(Shared::new(
                queue,
                self.options,
                self.backoffs,
                self.repeat_strategy,
            )),
            processor: self.processor,
        };
        if autorun {
            worker.run()?;
        }
        Ok(worker)
    }
}

impl<B, F, Fut, T> Worker<B, F>
where
    B: Backend,
    F: Fn(ActiveJob<B>, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ProcessResult<T>> + Send,
    T: serde::Serialize,
{
    /// A worker for the queue `name` on `backend`, running the closure `processor`.
    ///
    /// `backend` may be shared with other workers, queues and event readers (a clone): the
    /// worker takes a [handle](crate::backend::Lifecycle::handle) of its own, and closing it
    /// closes nothing another user still needs.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] (field `name`) when `backend` is bound to
    /// another queue (as [`Queue::try_new`]); otherwise see [`WorkerBuilder::build`].
    pub async fn new(
        name: QueueName,
        backend: B,
        options: WorkerOptions,
        processor: F,
    ) -> Result<Self> {
        Self::builder(Queue::try_new(name, backend)?, processor)
            .options(options)
            .build()
            .await
    }

    /// A worker for the jobs `queue` adds, running the closure `processor`: the queue's name
    /// and backend, without spelling them out as [`new`](Self::new) does.
    ///
    /// Like `new`, the worker works on a [handle](crate::backend::Lifecycle::handle) of its own,
    /// so the queue stays usable and closing the worker leaves it open.
    ///
    /// ```no_run
    /// # async fn demo<B: bullmq_core::backend::Backend>(queue: bullmq_core::Queue<B>) -> bullmq_core::Result<()> {
    /// use bullmq_core::worker::{ActiveJob, Worker, WorkerOptions};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// let worker = Worker::from_queue(
    ///     &queue,
    ///     WorkerOptions::new(),
    ///     |job: ActiveJob<B>, _: CancellationToken| async move { Ok(job.name.len()) },
    /// )
    /// .await?;
    /// queue.add("greet", &"hello", Default::default()).await?;
    /// worker.close().await;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`WorkerBuilder::build`].
    pub async fn from_queue(
        queue: &Queue<B>,
        options: WorkerOptions,
        processor: F,
    ) -> Result<Self> {
        Self::builder(queue.duplicate(), processor)
            .options(options)
            .build()
            .await
    }
}

impl<B: Backend, P: Processor<B>> Worker<B, P> {
    /// A builder for a worker of `queue` running `processor` (a closure or a [`Processor`]).
    pub fn builder(queue: Queue<B>, processor: P) -> WorkerBuilder<B, P> {
        Self::builder_shared(queue, Arc::new(processor))
    }

    /// A builder whose processor is shared with other workers (a pool's).
    pub(crate) fn builder_shared(queue: Queue<B>, processor: Arc<P>) -> WorkerBuilder<B, P> {
        WorkerBuilder {
            queue,
            processor,
            options: WorkerOptions::default(),
            backoffs: HashMap::new(),
            repeat_strategy: None,
        }
    }

    /// Starts processing (done by the builder when `autorun` is set).
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] once closing; nothing happens when already running.
    pub fn run(&self) -> Result<()> {
        if self.shared.is_closing() {
            return Err(Error::Closed("worker"));
        }
        if self.shared.running.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let shared = &self.shared;
        *shared
            .started
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(std::time::Instant::now());
        tracing::info!(
            target: "bullmq",
            queue = %shared.queue.name(),
            worker = shared.opts.name.as_deref(),
            concurrency = self.concurrency(),
            "worker started"
        );
        // The stalled check first: the main loop waits for its first run, as upstream's `run`
        // awaits `startStalledCheckTimer` before its loop.
        if shared.opts.skip_stalled_check {
            shared.first_check.cancel();
        } else {
            self.start_stalled_check();
        }
        if !shared.opts.skip_lock_renewal {
            let renewal = tokio::spawn(locks::renew_locks(Arc::clone(shared)));
            self.timers().push(renewal);
        }
        let main = tokio::spawn(main_loop::run_and_report(
            Arc::clone(shared),
            Arc::clone(&self.processor),
        ));
        *shared.main.lock().unwrap_or_else(PoisonError::into_inner) = Some(main);
        Ok(())
    }

    /// Starts the stalled-jobs check (done by [`run`](Self::run); call it when processing
    /// manually, as upstream's `startStalledCheckTimer`).
    pub fn start_stalled_check(&self) {
        if self.shared.opts.skip_stalled_check || self.shared.is_closing() {
            return;
        }
        // Node's span marks the start; the checks themselves are root spans of their own.
        drop(spans::worker::start_stalled_check_timer(
            self.shared.queue.name().as_str(),
            self.shared.opts.name.as_deref(),
            self.shared.id(),
        ));
        let handle = tokio::spawn(stalled::check_stalled(Arc::clone(&self.shared)));
        self.timers().push(handle);
    }

    /// The worker's events; see [`WorkerEvent`].
    #[must_use]
    pub fn events(&self) -> broadcast::Receiver<WorkerEvent> {
        self.shared.subscribe()
    }

    /// The worker's queue.
    #[must_use]
    pub fn queue(&self) -> &Queue<B> {
        &self.shared.queue
    }

    /// The settings the worker's moves send (name, lock duration, limiter, metrics).
    #[must_use]
    pub fn settings(&self) -> Arc<WorkerSettings> {
        Arc::clone(&self.shared.settings)
    }

    /// True from [`run`](Self::run) until closed.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.shared.running.load(Ordering::SeqCst)
    }

    /// Whether the worker's connections work: false while its blocking wait or its fetches
    /// keep failing (a lost connection, or a refusal such as `NOPERM` or `READONLY`, during
    /// which the worker fetches without blocking); true again after the next success. For
    /// health probes.
    #[must_use]
    pub fn connections_healthy(&self) -> bool {
        self.shared.wait_failures.is_healthy() && self.shared.fetch_failures.is_healthy()
    }

    /// The worker's state and its connections' health, for readiness and liveness probes.
    #[must_use]
    pub fn health(&self) -> WorkerHealth {
        let state = if self.shared.failure().is_some() && !self.shared.is_closing() {
            RunState::Failed
        } else if self.shared.running.load(Ordering::SeqCst) {
            if self.shared.is_closing() {
                RunState::Closing
            } else if self.is_paused() {
                RunState::Paused
            } else {
                RunState::Running
            }
        } else if self.shared.is_closing() {
            RunState::Closed
        } else {
            RunState::Idle
        };
        WorkerHealth {
            state,
            connection: {
                let mut connection = self.shared.health.snapshot();
                // A refused fetch (the main loop's) counts as well as a failed wait.
                connection.healthy &= self.connections_healthy();
                connection
            },
            active_jobs: self.active_count(),
            concurrency: self.concurrency(),
        }
    }

    /// Where the worker's connections' health is kept: a backend's own signal (a connection
    /// watch) may feed it too.
    #[must_use]
    pub fn health_tracker(&self) -> &HealthTracker {
        &self.shared.health
    }

    /// True while paused.
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.shared.is_paused()
    }

    /// How many jobs are in progress.
    #[must_use]
    pub fn active_count(&self) -> usize {
        self.shared.active.load(Ordering::SeqCst)
    }

    /// How many jobs are processed at once.
    #[must_use]
    pub fn concurrency(&self) -> usize {
        self.shared.concurrency.load(Ordering::SeqCst)
    }

    /// Changes the concurrency while running.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`] for 0.
    pub fn set_concurrency(&self, concurrency: usize) -> Result<()> {
        WorkerOptions::new().concurrency(concurrency).validate()?;
        self.shared.concurrency.store(concurrency, Ordering::SeqCst);
        self.shared.wake.notify_one();
        Ok(())
    }

    /// Stops taking jobs; unless `do_not_wait_active`, waits for those in progress.
    pub async fn pause(&self, do_not_wait_active: bool) {
        if self.shared.paused.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::info!(target: "bullmq", queue = %self.shared.queue.name(), "worker paused");
        let span = spans::worker::pause(
            self.shared.queue.name().as_str(),
            self.shared.opts.name.as_deref(),
            self.shared.id(),
            do_not_wait_active,
        );
        async {
            // Wake a blocking wait, so the loop sees the pause now rather than after drainDelay.
            if let Err(err) = self.shared.queue.backend().disconnect_blocking(true).await {
                self.shared.emit_error(err);
            }
            if !do_not_wait_active {
                // A fetch begun before the pause may still bring a job: wait for it too.
                while self.active_count() > 0 || self.shared.fetching.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
        .instrument(span)
        .await;
        self.shared.emit(WorkerEvent::Paused);
    }

    /// Takes jobs again after [`pause`](Self::pause).
    pub fn resume(&self) {
        if self.shared.paused.swap(false, Ordering::SeqCst) {
            let _span = spans::worker::resume(
                self.shared.queue.name().as_str(),
                self.shared.opts.name.as_deref(),
                self.shared.id(),
            );
            tracing::info!(target: "bullmq", queue = %self.shared.queue.name(), "worker resumed");
            drop(_span);
            // Node's worker restarts its stalled-jobs check on resume, in a span of its own.
            if !self.shared.opts.skip_stalled_check {
                drop(spans::worker::start_stalled_check_timer(
                    self.shared.queue.name().as_str(),
                    self.shared.opts.name.as_deref(),
                    self.shared.id(),
                ));
            }
            self.shared.wake.notify_one();
            self.shared.emit(WorkerEvent::Resumed);
        }
    }

    /// Takes the next job for manual processing (upstream: `getNextJob`), locked with `token`
    /// (create one with [`LockToken::new`]); `block` waits on the queue's marker up to
    /// `drain_delay` when the queue is empty. Finish it through
    /// [`job`](Self::job)`(&job)`'s moves with the same token. A job that cannot be read is
    /// failed with a reason that says so and reported as an error.
    ///
    /// # Errors
    ///
    /// A backend error, or [`Error::JobDecode`] for an unreadable job.
    pub async fn get_next_job(&self, token: &LockToken, block: bool) -> Result<Option<Job>> {
        let fetched = self.shared.get_next(token, block).await?;
        // Node's `getNextJob` span follows the fetch, the job's producer its parent.
        let job = fetched.as_ref().and_then(|f| f.job.as_ref().ok());
        let span = spans::worker::get_next_job(
            self.shared.queue.name().as_str(),
            self.shared.opts.name.as_deref(),
            self.shared.id(),
            block,
            fetched.as_ref().map(|f| f.id.as_str()),
        );
        if let Some(tm) = job
            .and_then(|j| j.opts.telemetry.as_ref())
            .and_then(|t| t.metadata.as_deref())
        {
            crate::telemetry::context::set_parent_from(&span, tm);
        }
        drop(span);
        let Some(fetched) = fetched else {
            return Ok(None);
        };
        match fetched.job {
            Ok(job) => {
                self.shared.advance_scheduler(&job).await;
                Ok(Some(job))
            }
            Err(decode) => {
                let err = decode.clone();
                // Fails it, without taking a next job: a manual worker takes its own.
                finish::fail_corrupt(&self.shared, fetched.id, decode, token, false).await;
                Err(Error::JobDecode(err))
            }
        }
    }

    /// A handle on `job` whose moves (`move_to_completed`, `move_to_failed`, …) send this
    /// worker's settings, as a Node.js job taken by a worker does.
    #[must_use]
    pub fn job<'a>(&'a self, job: &'a Job) -> JobRef<'a, B> {
        self.shared.job_handle(job)
    }

    /// Closes gracefully: stops taking jobs, waits for those in progress, then closes the
    /// backend.
    pub async fn close(&self) {
        self.close_inner(None, false).await;
    }

    /// Closes, waiting at most `timeout` for the jobs in progress; those still running then
    /// are cancelled and left to the stalled-jobs check (never lost). True when every job
    /// finished in time.
    pub async fn close_timeout(&self, timeout: Duration) -> bool {
        self.close_inner(Some(timeout), false).await
    }

    /// Closes at once: jobs in progress are cancelled and left active, for the stalled-jobs
    /// check of any worker to take back.
    pub async fn close_force(&self) {
        self.close_inner(None, true).await;
    }

    async fn close_inner(&self, timeout: Option<Duration>, force: bool) -> bool {
        if !close::begin(&self.shared) {
            return true;
        }
        let span = spans::worker::close(
            self.shared.queue.name().as_str(),
            self.shared.opts.name.as_deref(),
            self.shared.id(),
            force,
        );
        close::finish(&self.shared, timeout, force)
            .instrument(span)
            .await
    }

    fn timers(&self) -> std::sync::MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.shared
            .timers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Cancels the token of job `id` if this worker is processing it, with
    /// [`CancelReason::Requested`] carrying `reason` (Node 6.7's `worker.cancelJob`); the
    /// processor decides what to do, and the job ends as its return says. False when the job
    /// is not in progress here.
    pub fn cancel_job(&self, id: &crate::JobId, reason: Option<&str>) -> bool {
        self.shared
            .locks
            .cancel(id, CancelReason::Requested(reason.map(str::to_owned)))
    }

    /// Cancels every job in progress here, as [`cancel_job`](Self::cancel_job) does (Node
    /// 6.7's `worker.cancelAllJobs`).
    pub fn cancel_all_jobs(&self, reason: Option<&str>) {
        self.shared
            .locks
            .cancel_all(&CancelReason::Requested(reason.map(str::to_owned)));
    }

    /// Resolves when the main loop has ended: `Ok` once closed, `Err` with the cause when it
    /// ended on its own (its own backend handle, `worker.queue().backend()`, was closed from
    /// outside, or it panicked), which is
    /// what a supervisor (a [`WorkerPool`](crate::WorkerPool)) restarts a worker on. Never
    /// resolves before [`run`](Self::run).
    pub async fn stopped(&self) -> std::result::Result<(), Arc<Error>> {
        self.shared.loop_ended.cancelled().await;
        self.shared.failure().map_or(Ok(()), Err)
    }
}
