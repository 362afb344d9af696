//! The main loop: keeps up to `concurrency` jobs in progress, each in a task that processes
//! its job and takes the next one in the same round trip as it finishes (upstream:
//! `Worker#mainLoop`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::fetch::is_connection_error;
use super::finish;
use super::processor::Processor;
use super::shared::Shared;
use crate::backend::{Backend, FetchedJob, LockToken};

/// The pause after a failed fetch that is not the connection's, so a persistent refusal
/// does not spin.
const SHORT_RETRY: Duration = Duration::from_millis(100);

/// Runs until the worker closes. Errors are reported as events and the loop carries on.
pub(crate) async fn run<B: Backend, P: Processor<B>>(shared: Arc<Shared<B>>, processor: Arc<P>) {
    while !shared.is_closing() {
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
            let _fetching = Fetching::start(&shared);
            match shared.get_next(&token, true).await {
                Ok(Some(job)) => {
                    spawn_job(&shared, &processor, job, token);
                    Ok(())
                }
                Ok(None) => Ok(()),
                Err(err) => Err(err),
            }
        };
        match fetched {
            Ok(()) => shared.fetch_failures.recovered(),
            Err(err) => {
                let connection = is_connection_error(&err);
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
