//! Lock renewal: one timer renews the locks of every job in progress with a single
//! `extendLocks` call (upstream: `LockManager`); a lock found lost cancels that job's token
//! (see [`LockTracker`](super::lock_tracker::LockTracker)).

use std::sync::Arc;

use super::events::WorkerEvent;
use super::shared::Shared;
use crate::JobId;
use crate::backend::Backend;
use crate::telemetry::spans;
use tracing::Instrument;

/// Renews locks until the worker closes: every half renewal period, the locks older than half
/// a period are extended together.
pub(crate) async fn renew_locks<B: Backend>(shared: Arc<Shared<B>>) {
    let period = shared.opts.lock_renew_time() / 2;
    if period.is_zero() {
        return;
    }
    loop {
        // Renewal goes on while a closing worker waits for its jobs; it has its own stop.
        tokio::select! {
            () = tokio::time::sleep(period) => {}
            () = shared.stop_renewal.cancelled() => return,
        }
        let due = shared.locks.due(period);
        if due.is_empty() {
            continue;
        }
        let backend = shared.queue.backend();
        let ids: Vec<&str> = due.iter().map(|(id, _)| id.as_str()).collect();
        let span = spans::extend_locks(
            shared.queue.name().as_str(),
            shared.opts.name.as_deref(),
            shared.id(),
            &ids,
        );
        drop(ids);
        match backend
            .extend_locks(&due, shared.opts.lock_duration)
            .instrument(span.clone())
            .await
        {
            Ok(lost) => {
                // One `LockLost` event per lost lock, and no error besides: the job is
                // someone else's now, and its late finish is dropped quietly (finish.rs).
                for id in &lost {
                    let sent = due.iter().find(|(due_id, _)| due_id == id).map(|(_, t)| t);
                    if sent.is_some_and(|token| shared.locks.lost(id, token)) {
                        // Node's span records nothing of it: the failure is an error event.
                        tracing::warn!(target: "bullmq", job_id = %id, "lock renewal failed: lock lost");
                        shared.emit(WorkerEvent::LockLost { job_id: id.clone() });
                    }
                }
                if shared.observed() {
                    let job_ids: Vec<JobId> = due
                        .into_iter()
                        .map(|(id, _)| id)
                        .filter(|id| !lost.contains(id))
                        .collect();
                    if !job_ids.is_empty() {
                        shared.emit(WorkerEvent::LocksRenewed { job_ids });
                    }
                }
            }
            Err(err) => {
                // Node catches it inside its span: an error event, nothing on the span.
                shared.emit_error(err);
            }
        }
    }
}
