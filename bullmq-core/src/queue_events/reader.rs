//! [`QueueEvents`]: the loop that reads the queue's event stream and hands the events to
//! subscribers and to [`wait_until_finished`](QueueEvents::wait_until_finished).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::event::ReceivedEvent;
use super::options::QueueEventsOptions;
use super::subscription::{EventItem, EventSubscription};
use crate::backend::{ClientRole, EventId, Events, Lifecycle, StreamEvent};
use crate::options::ValidationError;
use crate::telemetry::{HealthTracker, ReaderHealth, RunState};
use crate::{Error, Result};

/// How a job finished, as its stream event tells (raw values, decoded by the waiter).
#[derive(Debug)]
pub(crate) enum Finish {
    /// `completed`, with its `returnvalue` text.
    Completed(Option<String>),
    /// `failed`, with its `failedReason`.
    Failed(Option<String>),
}

/// Waiters for one job's end, by job id.
type Watchers = HashMap<String, Vec<oneshot::Sender<Finish>>>;

/// What the reader and the handle share.
#[derive(Debug)]
struct Shared {
    /// Present until the reader is closed; subscribers get a receiver from it.
    sender: Mutex<Option<broadcast::Sender<EventItem>>>,
    watchers: Mutex<Watchers>,
    cancel: CancellationToken,
    running: AtomicBool,
    /// True once the position to read from is known: from then on no event is missed.
    ready: watch::Sender<bool>,
    last_id: Mutex<Option<EventId>>,
    /// Reads seen to succeed or fail, for `QueueEvents::health`.
    health: HealthTracker,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The data behind these locks stays consistent even if a holder panicked.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn report(&self, sender: &broadcast::Sender<EventItem>, error: Error) {
        if error.is_connection_failure() {
            self.health.record_failure();
        }
        tracing::warn!(%error, "queue events: reading the event stream failed; retrying");
        // No subscriber is not a failure.
        let _ = sender.send(EventItem::Error(Arc::new(error)));
    }

    fn dispatch(&self, sender: &broadcast::Sender<EventItem>, entry: StreamEvent) {
        let event = ReceivedEvent::decode(entry);
        self.notify_watchers(&event);
        let _ = sender.send(EventItem::Event(Arc::new(event)));
    }

    /// Wakes the waiters of a job that completed or failed. Uses the raw fields, so a
    /// `completed` whose return value is not JSON still ends the wait.
    fn notify_watchers(&self, event: &ReceivedEvent) {
        let finish = match event.field("event") {
            Some("completed") => Finish::Completed(event.field("returnvalue").map(str::to_owned)),
            Some("failed") => Finish::Failed(event.field("failedReason").map(str::to_owned)),
            _ => return,
        };
        let Some(job_id) = event.field("jobId") else {
            return;
        };
        let waiting = {
            let mut watchers = lock(&self.watchers);
            if watchers.is_empty() {
                return;
            }
            watchers.remove(job_id)
        };
        let Some(waiting) = waiting else { return };
        let mut finish = Some(finish);
        let last = waiting.len().saturating_sub(1);
        for (i, tx) in waiting.into_iter().enumerate() {
            // Each waiter needs its own copy; the last one takes the original.
            let copy = if i == last {
                finish.take()
            } else {
                finish.as_ref().map(Finish::duplicate)
            };
            if let Some(copy) = copy {
                let _ = tx.send(copy);
            }
        }
    }

    /// Ends the reader for everyone: subscribers see the end of their stream, waiters see
    /// the reader closed.
    fn shut(&self) {
        self.cancel.cancel();
        drop(lock(&self.sender).take());
        lock(&self.watchers).clear();
    }
}

impl Finish {
    fn duplicate(&self) -> Self {
        match self {
            Self::Completed(v) => Self::Completed(v.clone()),
            Self::Failed(v) => Self::Failed(v.clone()),
        }
    }
}

/// Reads a queue's event stream, as Node.js BullMQ's `QueueEvents`: the events every runtime's
/// producers and workers write (typed as [`QueueEvent`](super::QueueEvent)) and custom events.
///
/// The read loop runs on the backend's dedicated events connection (named `…:qe` like
/// Node's), blocks up to `blocking_timeout` per read, and remembers the last id it saw: after a
/// failure (reported to subscribers as [`EventItem::Error`]) it reads again from there, so no
/// event is lost. With `autorun` (the default) it starts on the current Tokio runtime as soon
/// as it is built.
///
/// ```no_run
/// # async fn demo<B: bullmq_core::backend::Backend>(backend: B) -> bullmq_core::Result<()> {
/// use bullmq_core::queue_events::{QueueEvent, QueueEvents, QueueEventsOptions};
///
/// let events = QueueEvents::new(backend, QueueEventsOptions::new())?;
/// let mut done = events.subscribe().only(&["completed", "failed"]);
/// while let Some(received) = done.next_event().await {
///     if let QueueEvent::Completed { job_id, returnvalue, .. } = &received.event {
///         println!("{job_id} returned {returnvalue}");
///     }
/// }
/// # Ok(()) }
/// ```
pub struct QueueEvents<B> {
    backend: B,
    opts: QueueEventsOptions,
    shared: Arc<Shared>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl<B> std::fmt::Debug for QueueEvents<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueEvents")
            .field("opts", &self.opts)
            .field("last_event_id", &*lock(&self.shared.last_id))
            .finish_non_exhaustive()
    }
}

impl<B> QueueEvents<B>
where
    B: Events + Lifecycle + Clone + 'static,
{
    /// A reader of `backend`'s queue. With `autorun` it starts at once, which needs a Tokio
    /// runtime.
    ///
    /// The backend may be shared (a clone of a queue's or worker's): the reader reads on a
    /// [handle](Lifecycle::handle) of its own, with its own events connection, which
    /// [`close`](Self::close) closes; the backend it was given stays open.
    // Taken by value, as before handles: the reader owns what it is given.
    #[allow(clippy::needless_pass_by_value)]
    pub fn new(backend: B, opts: QueueEventsOptions) -> Result<Self> {
        opts.validate()?;
        let backend = backend.handle();
        let (sender, _) = broadcast::channel(opts.capacity);
        let shared = Arc::new(Shared {
            sender: Mutex::new(Some(sender)),
            watchers: Mutex::new(HashMap::new()),
            cancel: CancellationToken::new(),
            running: AtomicBool::new(false),
            ready: watch::Sender::new(false),
            last_id: Mutex::new(None),
            health: HealthTracker::default(),
        });
        let events = Self {
            backend,
            opts,
            shared,
            task: Mutex::new(None),
        };
        if events.opts.autorun {
            let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
                ValidationError::single(
                    "queue events options",
                    "autorun",
                    "needs a Tokio runtime: build the reader inside one, or turn autorun off and \
                     call run()",
                )
            })?;
            events.claim_run()?;
            let (backend, opts, shared) = (
                events.backend.clone(),
                events.opts.clone(),
                Arc::clone(&events.shared),
            );
            let task = runtime.spawn(async move { consume(&backend, &opts, &shared).await });
            *lock(&events.task) = Some(task);
        }
        Ok(events)
    }

    /// Runs the read loop in this task until [`close`](Self::close) (Node.js' `run()`, for a
    /// reader built without `autorun`). Fails if it is already running or was closed.
    pub async fn run(&self) -> Result<()> {
        self.claim_run()?;
        consume(&self.backend, &self.opts, &self.shared).await;
        Ok(())
    }

    fn claim_run(&self) -> Result<()> {
        if self.shared.cancel.is_cancelled() {
            return Err(Error::Closed("queue events reader"));
        }
        if self.shared.running.swap(true, Ordering::SeqCst) {
            return Err(ValidationError::single(
                "queue events",
                "run",
                "the queue events reader is already running",
            )
            .into());
        }
        Ok(())
    }
}

impl<B> QueueEvents<B> {
    /// A new subscription: every event read from now on, plus errors. After
    /// [`close`](Self::close), a subscription that ends at once.
    #[must_use]
    pub fn subscribe(&self) -> EventSubscription {
        EventSubscription::new(
            lock(&self.shared.sender)
                .as_ref()
                .map(broadcast::Sender::subscribe),
        )
    }

    /// Resolves once the reader knows where it reads from: every event added after this
    /// returns is seen. Fails if the reader is closed first.
    pub async fn wait_until_ready(&self) -> Result<()> {
        let mut ready = self.shared.ready.subscribe();
        tokio::select! {
            biased;
            () = self.shared.cancel.cancelled() => Err(Error::Closed("queue events reader")),
            ok = ready.wait_for(|r| *r) => ok.map(drop).map_err(|_| Error::Closed("queue events reader")),
        }
    }

    /// The id of the last event read, to resume from with
    /// [`last_event_id`](QueueEventsOptions::last_event_id) (`None` before the first read).
    #[must_use]
    pub fn last_event_id(&self) -> Option<EventId> {
        lock(&self.shared.last_id).clone()
    }

    /// True while the read loop runs.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.shared.running.load(Ordering::SeqCst) && !self.shared.cancel.is_cancelled()
    }

    /// The reader's state and its connection's health, for readiness and liveness probes:
    /// `Running` while reading, `Closed` once closed, `Idle` before it starts.
    #[must_use]
    pub fn health(&self) -> ReaderHealth {
        let state = if self.shared.cancel.is_cancelled() {
            RunState::Closed
        } else if self.shared.running.load(Ordering::SeqCst) {
            RunState::Running
        } else {
            RunState::Idle
        };
        ReaderHealth {
            state,
            connection: self.shared.health.snapshot(),
        }
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Stops the read loop at once, even in the middle of a blocking read, and waits for it
    /// to end; subscriptions then end and waiters get [`Closed`](super::WaitError::Closed).
    /// The reader's own handle is closed (its events connection leaves `CLIENT LIST`); the
    /// backend it was built from stays open. A read abandoned mid-way ends on the server
    /// within `blocking_timeout`. Calling it again does nothing.
    pub async fn close(&self)
    where
        B: Lifecycle,
    {
        self.shared.shut();
        let task = lock(&self.task).take();
        if let Some(task) = task {
            // The loop ends at its next await; a panic in it has already been reported by tokio.
            let _ = task.await;
        }
        if let Err(err) = self.backend.close(false).await {
            tracing::debug!(target: "bullmq", error = %err, "closing the reader's connection");
        }
    }

    /// Registers a waiter for one job's end (see [`wait_until_finished`](Self::wait_until_finished)).
    pub(crate) fn watch_job(&self, job_id: &str) -> Option<oneshot::Receiver<Finish>> {
        if self.shared.cancel.is_cancelled() {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        let mut watchers = lock(&self.shared.watchers);
        let list = watchers.entry(job_id.to_owned()).or_default();
        // Waiters that gave up (timed out, dropped) leave closed senders behind.
        list.retain(|tx| !tx.is_closed());
        list.push(tx);
        Some(rx)
    }

    /// Forgets waiters that gave up on `job_id`.
    pub(crate) fn unwatch_closed(&self, job_id: &str) {
        let mut watchers = lock(&self.shared.watchers);
        if let Some(list) = watchers.get_mut(job_id) {
            list.retain(|tx| !tx.is_closed());
            if list.is_empty() {
                watchers.remove(job_id);
            }
        }
    }
}

impl<B> Drop for QueueEvents<B> {
    fn drop(&mut self) {
        self.shared.shut();
    }
}

/// Waits `delay`; false when cancelled first.
async fn pause(cancel: &CancellationToken, delay: Duration) -> bool {
    tokio::select! {
        () = cancel.cancelled() => false,
        () = tokio::time::sleep(delay) => true,
    }
}

/// The read loop (Node.js' `consumeEvents`), until cancelled or the backend closes.
async fn consume<B: Events + Lifecycle>(backend: &B, opts: &QueueEventsOptions, shared: &Shared) {
    let Some(sender) = lock(&shared.sender).clone() else {
        return;
    };
    read_loop(backend, opts, shared, &sender).await;
    shared.running.store(false, Ordering::SeqCst);
    shared.shut();
}

async fn read_loop<B: Events + Lifecycle>(
    backend: &B,
    opts: &QueueEventsOptions,
    shared: &Shared,
    sender: &broadcast::Sender<EventItem>,
) {
    let cancel = &shared.cancel;
    // Named for `getWorkers()`-style discovery, as Node.js names it; a failure here is
    // reported and not fatal: the backend names the connection again when it reopens it.
    let named = tokio::select! {
        () = cancel.cancelled() => return,
        named = backend.set_client_role(ClientRole::QueueEvents) => named,
    };
    if let Err(error) = named {
        shared.report(sender, error);
    }
    let Some(mut after) = start_position(backend, opts, shared, sender).await else {
        return;
    };
    *lock(&shared.last_id) = Some(after.clone());
    shared.ready.send_replace(true);
    shared.health.record_ok(backend.clock().now_ms());
    let mut failures: u32 = 0;
    while !cancel.is_cancelled() && !backend.is_closing() {
        let read = tokio::select! {
            biased;
            () = cancel.cancelled() => return,
            read = backend.read_events(&after, opts.blocking_timeout) => read,
        };
        match read {
            Ok(entries) => {
                failures = 0;
                shared.health.record_ok(backend.clock().now_ms());
                let Some(last) = entries.last().map(|e| e.id.clone()) else {
                    continue;
                };
                for entry in entries {
                    shared.dispatch(sender, entry);
                }
                *lock(&shared.last_id) = Some(last.clone());
                after = last;
            }
            Err(error) => {
                if backend.is_closing() {
                    return;
                }
                failures = failures.saturating_add(1);
                shared.report(sender, error);
                // The first retry is immediate: a dropped connection reopens on the next read.
                if failures > 1 && !pause(cancel, opts.retry_delay).await {
                    return;
                }
            }
        }
    }
}

/// Where to read from: the given id, or the stream's newest id for `$` (resolved once, so
/// a reconnect before the first event loses nothing). `None` when cancelled.
async fn start_position<B: Events + Lifecycle>(
    backend: &B,
    opts: &QueueEventsOptions,
    shared: &Shared,
    sender: &broadcast::Sender<EventItem>,
) -> Option<EventId> {
    if let Some(id) = opts.start_id() {
        return Some(id.clone());
    }
    let cancel = &shared.cancel;
    let mut failures: u32 = 0;
    loop {
        let newest = tokio::select! {
            () = cancel.cancelled() => return None,
            newest = backend.last_event_id() => newest,
        };
        match newest {
            Ok(id) => return Some(id),
            Err(error) => {
                if backend.is_closing() {
                    return None;
                }
                failures = failures.saturating_add(1);
                shared.report(sender, error);
                if failures > 1 && !pause(cancel, opts.retry_delay).await {
                    return None;
                }
            }
        }
    }
}
