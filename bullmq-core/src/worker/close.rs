//! Closing a worker: stop taking jobs, let those in progress finish (within a timeout), stop
//! the timers and close the worker's own handle on the backend (which deregisters it from
//! `getWorkers`). One path for `close`, `close_timeout`, `close_force` and a dropped worker.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use super::cancel::CancelReason;
use super::events::WorkerEvent;
use super::shared::{self, Shared};
use crate::backend::Backend;

/// Marks `shared` closing, synchronously: from here on the main loop and the finishing moves
/// take no new job. False when it was closing already.
pub(crate) fn begin<B>(shared: &Shared<B>) -> bool {
    if shared.closing.swap(true, Ordering::SeqCst) {
        return false;
    }
    shared.emit(WorkerEvent::Closing);
    shared.shutdown.cancel();
    shared.wake.notify_one();
    true
}

/// Closes a worker whose closing has [begun](begin): waits for the jobs in progress (at most
/// `timeout`; not at all with `force`), cancels the rest with [`CancelReason::Closing`] and
/// leaves them active for the stalled check, then closes the worker's backend handle. True
/// when every job finished in time.
pub(crate) async fn finish<B: Backend>(
    shared: &Arc<Shared<B>>,
    timeout: Option<Duration>,
    force: bool,
) -> bool {
    if let Err(err) = shared.queue.backend().disconnect_blocking(true).await {
        shared.emit_error(err);
    }
    // The loop stops taking jobs once closing; a job it took meanwhile still gets its task.
    let main = shared
        .main
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(mut main) = main {
        if force {
            main.abort();
        }
        // The loop ends at its next await once closing; bounded all the same, so that closing
        // never outlasts its deadline (a caller such as `Shutdown` gives up past it).
        let ended = match timeout {
            Some(t) => tokio::time::timeout(t, &mut main).await.is_ok(),
            None => {
                let _ = (&mut main).await;
                true
            }
        };
        if !ended {
            main.abort();
            let _ = main.await;
        }
    }
    let mut jobs: Vec<_> = shared
        .tasks
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
        .collect();
    let finished = if force {
        false
    } else {
        let all = async {
            for job in &mut jobs {
                let _ = job.await;
            }
        };
        match timeout {
            Some(t) => tokio::time::timeout(t, all).await.is_ok(),
            None => {
                all.await;
                true
            }
        }
    };
    if !finished {
        shared.locks.cancel_all(&CancelReason::Closing);
        shared.force.cancel();
        for job in &jobs {
            job.abort();
        }
    }
    shared.stop_renewal.cancel();
    let timers: Vec<_> = shared
        .timers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
        .collect();
    for timer in timers {
        timer.abort();
        let _ = timer.await;
    }
    if let Err(err) = shared.queue.backend().close(force || !finished).await {
        shared.emit_error(err);
    }
    shared.running.store(false, Ordering::SeqCst);
    let uptime = shared
        .started
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .map(|t| t.elapsed());
    // Outside the `close` span (Node's has no event): a log line of its own.
    tracing::info!(
        target: "bullmq",
        parent: None,
        queue = %shared.queue.name(),
        worker = shared.opts.name.as_deref(),
        uptime_ms = uptime.map(shared::millis),
        "worker stopped"
    );
    shared.emit(WorkerEvent::Closed);
    finished
}

/// What dropping a worker that was not closed does: it stops taking jobs at once, and a task
/// lets the jobs in progress finish within the worker's `close_timeout`, then deregisters it.
/// Outside a Tokio runtime nothing can run any more: every token is cancelled, and the jobs in
/// progress are left to the stalled check.
pub(crate) fn on_drop<B: Backend>(shared: &Arc<Shared<B>>) {
    if !begin(shared) {
        return;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            let shared = Arc::clone(shared);
            let timeout = shared.opts.close_timeout;
            tracing::debug!(target: "bullmq", queue = %shared.queue.name(), "worker dropped: closing it");
            runtime.spawn(async move {
                finish(&shared, Some(timeout), false).await;
            });
        }
        Err(_) => {
            shared.locks.cancel_all(&CancelReason::Closing);
            shared.force.cancel();
            shared.stop_renewal.cancel();
        }
    }
}
