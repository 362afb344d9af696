//! The main loop: keeps up to `concurrency` jobs in progress, each in a task that processes
//! its job and takes the next one in the same round trip as it finishes (upstream:
//! `Worker#mainLoop`).

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::events::WorkerEvent;
use super::finish;
use super::processor::Processor;
use super::shared::Shared;
use crate::backend::{Backend, FetchedJob, LockToken};
use crate::{Error, Result};

/// The pause after a failed fetch that is not the connection's, so a persistent refusal
/// does not spin.
const SHORT_RETRY: Duration = Duration::from_millis(100);

/// Runs the loop in its task, and records how it ended: `loop_ended` is cancelled however
/// it ends, and an end the worker did not ask for (its backend closed under it, a panic) is
/// kept as the worker's failure, reported as an error and seen by
/// [`Worker::stopped`](super::Worker::stopped) (a pool restarts such a worker).
///
/// The guard is made before the future, which owns it: a task aborted before its first poll
/// (a forced close right after `run`) still marks the loop ended.
pub(crate) fn run_and_report<B: Backend, P: Processor<B>>(
    shared: Arc<Shared<B>>,
    processor: Arc<P>,
) -> impl Future<Output = ()> + Send {
    let ended = Ended(Arc::clone(&shared));
    async move {
        if let Err(err) = run(&shared, &processor).await {
            ended.fail(err);
        }
        drop(ended);
    }
}

/// Marks the main loop ended when dropped: after it returns, panics or is aborted.
struct Ended<B>(Arc<Shared<B>>);

impl<B> Ended<B> {
    fn fail(&self, err: Error) {
        let err = Arc::new(err);
        tracing::error!(target: "bullmq", queue = %self.0.queue.name(), error = %err, "worker stopped on its own");
        *self
            .0
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&err));
        self.0.emit(WorkerEvent::Error(err));
    }
}

impl<B> Drop for Ended<B> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.fail(Error::Closed("worker's main loop (it panicked)"));
        }
        self.0.loop_ended.cancel();
    }
}

/// Runs until the worker closes, or fails when the worker's backend is closed by someone
/// else (nothing can be taken any more). Other errors are reported as events and the loop
/// carries on.
async fn run<B: Backend, P: Processor<B>>(
    shared: &Arc<Shared<B>>,
    processor: &Arc<P>,
) -> Result<()> {
    // Upstream starts the stalled check before its loop: no job is taken before it has run.
    tokio::select! {
        () = shared.first_check.cancelled() => {}
        () = shared.shutdown.cancelled() => {}
    }
    while !shared.is_closing() {
        if shared.queue.backend().is_closing() {
            return Err(Error::Closed(
                "worker's backend handle (closed from outside the worker)",
            ));
        }
        let busy =
            shared.active.load(Ordering::SeqCst) >= shared.concurrency.load(Ordering::SeqCst);
        if shared.is_paused() || busy {
            tokio::select! {
                () = shared.wake.notified() => {}
                () = shared.shutdown.cancelled() => {}
            }
            continue;
        }
        if shared.is_rate_limited() {
            shared.wait_for_rate_limit().await;
            continue;
        }
        let token = shared.new_token();
        let fetched = {
            // Marked while in flight, so `pause` waits for it and for the job it may bring
            // instead of returning while it can still take one.
            let _fetching = Fetching::start(shared);
            match shared.get_next(&token, true).await {
                Ok(Some(job)) => {
                    spawn_job(shared, processor, job, token);
                    Ok(())
                }
                Ok(None) => Ok(()),
                Err(err) => Err(err),
            }
        };
        match fetched {
            Ok(()) => shared.fetch_failures.recovered(),
            Err(err) => {
                let connection = err.is_connection_failure();
                let delay = if connection {
                    shared.opts.run_retry_delay
                } else {
                    SHORT_RETRY
                };
                // A refusal repeats every `SHORT_RETRY`: reported once per cause, with a
                // back-off. A lost connection is reported each time, as before.
                let news = shared.fetch_failures.failed(&err) || connection;
                if news && !shared.is_closing() {
                    shared.emit_error(err);
                }
                shared.sleep(delay).await;
            }
        }
    }
    Ok(())
}

/// Starts a task for `job`; it goes on with each next job its finishing move takes.
pub(crate) fn spawn_job<B: Backend, P: Processor<B>>(
    shared: &Arc<Shared<B>>,
    processor: &Arc<P>,
    job: FetchedJob,
    token: LockToken,
) {
    let slot = SlotGuard::take(shared);
    let processor = Arc::clone(processor);
    let handle = tokio::spawn(async move {
        let mut current = Some(job);
        while let Some(job) = current.take() {
            current = finish::process(&slot.0, &processor, job, &token).await;
        }
    });
    shared.track_task(handle);
}

/// The main loop's fetch in flight (`Shared::fetching`), cleared however the fetch ends.
struct Fetching<'a, B>(&'a Shared<B>);

impl<'a, B> Fetching<'a, B> {
    fn start(shared: &'a Shared<B>) -> Self {
        shared.fetching.store(true, Ordering::SeqCst);
        Self(shared)
    }
}

impl<B> Drop for Fetching<'_, B> {
    fn drop(&mut self) {
        self.0.fetching.store(false, Ordering::SeqCst);
    }
}

/// Gives a job slot back when its task ends, however it ends: returned, panicked outside the
/// processor, or aborted by a close. A slot not given back would leave the worker short of
/// one job for good, and `pause` waiting forever.
struct SlotGuard<B>(Arc<Shared<B>>);

impl<B> SlotGuard<B> {
    /// Takes a slot (counted in `active`) until dropped.
    fn take(shared: &Arc<Shared<B>>) -> Self {
        shared.active.fetch_add(1, Ordering::SeqCst);
        shared.report_active(1.0);
        Self(Arc::clone(shared))
    }
}

impl<B> Drop for SlotGuard<B> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        self.0.report_active(-1.0);
        self.0.wake.notify_one();
    }
}
