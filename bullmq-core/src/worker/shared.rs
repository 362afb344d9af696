//! The state a worker's loop, its job tasks, its timers and its handle share.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use super::events::WorkerEvent;
use super::failure_report::FailureReport;
use super::lock_tracker::LockTracker;
use super::options::WorkerOptions;
use crate::backend::{Lifecycle, LockToken, NextJob, WorkerSettings};
use crate::failed_attempt::BackoffFn;
use crate::failed_attempt::retry::RetryRules;
use crate::scheduling::RepeatStrategy;
use crate::telemetry::HealthTracker;
use crate::{Error, Job, JobRef, Queue};

/// How many events a subscriber may fall behind before it misses some.
const EVENT_BUFFER: usize = 1024;

/// Shared by everything a worker runs.
pub(crate) struct Shared<B> {
    pub(crate) queue: Queue<B>,
    pub(crate) opts: WorkerOptions,
    pub(crate) settings: Arc<WorkerSettings>,
    /// The queue's label of the per-job metrics.
    pub(crate) queue_label: crate::telemetry::metrics::QueueLabel,
    /// How a failed attempt is retried: `max_started_attempts` and the custom backoffs.
    pub(crate) retry: RetryRules,
    /// Overrides how cron-pattern schedulers' next runs are computed (none: Node's default).
    pub(crate) repeat_strategy: Option<RepeatStrategy>,
    /// The local events, made on the first subscription: an idle worker nobody listens to
    /// does not hold the channel's buffer (tokio allocates all of its slots up front).
    events: OnceLock<broadcast::Sender<WorkerEvent>>,
    /// The worker's id, prefix of every lock token it hands out (upstream: a UUID).
    id: String,
    next_token: AtomicU64,
    pub(crate) concurrency: AtomicUsize,
    /// Jobs taken and not finished yet (including the one being fetched by a finishing job).
    pub(crate) active: AtomicUsize,
    /// Set while the main loop fetches a job (see `Worker::pause`).
    pub(crate) fetching: AtomicBool,
    /// Signalled when a job finishes, the concurrency grows, or the worker resumes or closes.
    pub(crate) wake: Notify,
    pub(crate) paused: AtomicBool,
    pub(crate) closing: AtomicBool,
    pub(crate) running: AtomicBool,
    /// Set once the queue was found empty; cleared when a job is taken.
    pub(crate) drained: AtomicBool,
    /// Unix ms until which the queue is rate limited (0: not limited).
    pub(crate) limit_until: AtomicU64,
    /// Unix ms when the next delayed job is due (0: none known).
    pub(crate) block_until: AtomicU64,
    pub(crate) locks: LockTracker,
    /// Cancelled when the worker closes: ends timers, waits and the loop.
    pub(crate) shutdown: CancellationToken,
    /// Cancelled on a forced close: every processor's token is a child of it.
    pub(crate) force: CancellationToken,
    /// Cancelled once a closing worker's jobs are done: ends lock renewal.
    pub(crate) stop_renewal: CancellationToken,
    /// Tasks the loop spawned, so `close` can wait for them.
    pub(crate) tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// The blocking wait's failures since its last success.
    pub(crate) wait_failures: FailureReport,
    /// The main loop's fetch failures since its last success.
    pub(crate) fetch_failures: FailureReport,
    /// Round trips seen to succeed or fail, for `Worker::health`.
    pub(crate) health: HealthTracker,
    /// When `run` started (for the uptime logged at close).
    pub(crate) started: Mutex<Option<std::time::Instant>>,
    /// The main loop, while running.
    pub(crate) main: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The timers (lock renewal, stalled check), while running.
    pub(crate) timers: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Cancelled once the first stalled check has run (or was skipped): the main loop takes
    /// no job before it, as upstream's `run` starts the check before its loop.
    pub(crate) first_check: CancellationToken,
    /// Cancelled when the main loop has ended, however it ended.
    pub(crate) loop_ended: CancellationToken,
    /// Why the main loop ended when it was not closed: a panic, or its backend closed under it.
    pub(crate) failure: Mutex<Option<Arc<Error>>>,
}

impl<B> Shared<B> {
    pub(crate) fn new(
        queue: Queue<B>,
        opts: WorkerOptions,
        backoffs: HashMap<String, BackoffFn>,
        repeat_strategy: Option<RepeatStrategy>,
    ) -> Self {
        let id = uuid_v4();
        Self {
            settings: Arc::new(opts.settings()),
            queue_label: crate::telemetry::metrics::QueueLabel::new(queue.name().as_str()),
            retry: RetryRules {
                max_started_attempts: opts.max_started_attempts,
                backoffs,
            },
            concurrency: AtomicUsize::new(opts.concurrency),
            locks: LockTracker::default(),
            queue,
            opts,
            repeat_strategy,
            events: OnceLock::new(),
            id,
            next_token: AtomicU64::new(0),
            active: AtomicUsize::new(0),
            fetching: AtomicBool::new(false),
            wake: Notify::new(),
            paused: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            running: AtomicBool::new(false),
            drained: AtomicBool::new(false),
            limit_until: AtomicU64::new(0),
            block_until: AtomicU64::new(0),
            shutdown: CancellationToken::new(),
            force: CancellationToken::new(),
            stop_renewal: CancellationToken::new(),
            tasks: Mutex::new(Vec::new()),
            wait_failures: FailureReport::default(),
            fetch_failures: FailureReport::default(),
            health: HealthTracker::default(),
            started: Mutex::new(None),
            main: Mutex::new(None),
            timers: Mutex::new(Vec::new()),
            first_check: CancellationToken::new(),
            loop_ended: CancellationToken::new(),
            failure: Mutex::new(None),
        }
    }

    /// Why the main loop ended, when it ended on its own (not closed).
    pub(crate) fn failure(&self) -> Option<Arc<Error>> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A handle on `job` that moves it as this worker does: with its settings and its retry
    /// rules, as a Node.js job taken by a worker reads the worker's options.
    pub(crate) fn job_handle<'a>(&'a self, job: &'a Job) -> JobRef<'a, B> {
        self.queue
            .job_of(job)
            .by_worker(Arc::clone(&self.settings))
            .with_retry_rules(&self.retry)
    }

    /// The worker's id (Node's `worker.id`, the prefix of its lock tokens).
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Moves the `bullmq.worker.active_jobs` gauge by `delta` (+1 when a job starts, -1 when
    /// it ends): workers sharing a queue and a name add up instead of overwriting each other.
    pub(crate) fn report_active(&self, delta: f64) {
        crate::telemetry::metrics::active_jobs(
            self.queue.name().as_str(),
            self.opts.name.as_deref(),
            delta,
        );
    }

    /// A fresh lock token: `<worker id>:<n>`, as upstream builds them.
    pub(crate) fn new_token(&self) -> LockToken {
        let n = self.next_token.fetch_add(1, Ordering::Relaxed);
        LockToken::new(format!("{}:{n}", self.id))
    }

    /// A receiver of the worker's events from now on.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<WorkerEvent> {
        self.events
            .get_or_init(|| broadcast::channel(EVENT_BUFFER).0)
            .subscribe()
    }

    /// Sends an event; nobody listening is fine.
    pub(crate) fn emit(&self, event: WorkerEvent) {
        if let Some(events) = self.events.get() {
            let _ = events.send(event);
        }
    }

    /// True when someone listens, so events that cost a copy are built only then.
    pub(crate) fn observed(&self) -> bool {
        self.events.get().is_some_and(|e| e.receiver_count() > 0)
    }

    pub(crate) fn emit_error(&self, err: Error) {
        if err.is_connection_failure() {
            self.health.record_failure();
        }
        tracing::warn!(queue = %self.queue.name(), error = %err, "worker error");
        self.emit(WorkerEvent::Error(Arc::new(err)));
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    pub(crate) fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// Whether a finishing job may take the next one in the same call (upstream:
    /// `numTotal() <= concurrency && !(closing || paused)`).
    pub(crate) fn may_fetch_next(&self) -> bool {
        !self.is_closing()
            && !self.is_paused()
            && self.active.load(Ordering::SeqCst) <= self.concurrency.load(Ordering::SeqCst)
    }

    /// Marks the queue drained, emitting `drained` the first time.
    pub(crate) fn mark_drained(&self) {
        if !self.drained.swap(true, Ordering::SeqCst) {
            self.emit(WorkerEvent::Drained);
        }
    }

    /// Waits `delay`, or less if the worker closes meanwhile.
    pub(crate) async fn sleep(&self, delay: Duration) {
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = self.shutdown.cancelled() => {}
        }
    }

    pub(crate) fn track_task(&self, handle: tokio::task::JoinHandle<()>) {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle);
    }
}

impl<B: Lifecycle> Shared<B> {
    /// Now, Unix ms, from the backend's clock: the worker stamps jobs with the time the
    /// store and the queue use.
    pub(crate) fn now_ms(&self) -> u64 {
        self.queue.now_ms()
    }

    pub(crate) fn is_rate_limited(&self) -> bool {
        self.limit_until.load(Ordering::SeqCst) > self.now_ms()
    }

    /// Records the delays a fetch reported (upstream: `updateDelays`).
    pub(crate) fn update_delays(&self, next: &NextJob) {
        let limit = next
            .rate_limit_ttl
            .filter(|d| !d.is_zero())
            .map_or(0, |d| self.now_ms().saturating_add(millis(d)));
        self.limit_until.store(limit, Ordering::SeqCst);
        self.block_until
            .store(next.next_delayed_at.unwrap_or(0), Ordering::SeqCst);
    }
}

/// Whole milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A random UUID (version 4) as text, the form of Node's worker ids (`bullmq.worker.id`).
fn uuid_v4() -> String {
    let bits = fastrand::u128(..);
    // Version 4 in the 13th hex digit, variant `10` in the top bits of the 17th.
    let bits = (bits & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}
