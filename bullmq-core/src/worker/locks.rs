//! Lock renewal: one timer renews the locks of every job in progress with a single
//! `extendLocks` call (upstream: `LockManager`); a lock found lost cancels that job's token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::cancel::{CancelCell, CancelReason};
use super::events::WorkerEvent;
use super::shared::Shared;
use crate::JobId;
use crate::backend::{Backend, LockToken};
use crate::telemetry::spans;
use tracing::Instrument;

/// A job in progress whose lock the worker keeps alive.
struct Tracked {
    token: LockToken,
    cancel: CancellationToken,
    reason: CancelCell,
    renewed_at: Instant,
}

/// The jobs in progress, by id.
#[derive(Default)]
pub(crate) struct LockTracker {
    jobs: Mutex<HashMap<JobId, Tracked>>,
}

impl LockTracker {
    /// Starts keeping `id`'s lock alive; `cancel` is cancelled (and `reason` set) if the lock
    /// is lost or the job is cancelled.
    pub(crate) fn track(
        &self,
        id: JobId,
        token: LockToken,
        cancel: CancellationToken,
        reason: CancelCell,
    ) {
        let tracked = Tracked {
            token,
            cancel,
            reason,
            renewed_at: Instant::now(),
        };
        self.lock().insert(id, tracked);
    }

    /// Stops renewing `id`'s lock held with `token` (the job finished, or is about to). The
    /// token matters: after a lost lock this worker may hold the same job again, under another
    /// token, in another slot, and that run's lock must go on being renewed.
    pub(crate) fn untrack(&self, id: &JobId, token: &LockToken) {
        let mut jobs = self.lock();
        // One lookup where the token matches (every job's end): taken out, and put back in
        // the rare case it is another run's.
        if let Some((id, tracked)) = jobs.remove_entry(id)
            && tracked.token != *token
        {
            jobs.insert(id, tracked);
        }
    }

    /// Cancels every job's token for `reason` (a forced close, `cancel_all_jobs`).
    pub(crate) fn cancel_all(&self, reason: &CancelReason) {
        for tracked in self.lock().values() {
            tracked.reason.set(reason.clone());
            tracked.cancel.cancel();
        }
    }

    /// Cancels `id`'s token for `reason`; false when the job is not in progress here.
    pub(crate) fn cancel(&self, id: &JobId, reason: CancelReason) -> bool {
        self.lock().get(id).is_some_and(|t| {
            t.reason.set(reason);
            t.cancel.cancel();
            true
        })
    }

    /// The locks last renewed more than `older_than` ago, marked as renewed now (upstream
    /// renews a lock once it is half a renewal period old).
    fn due(&self, older_than: Duration) -> Vec<(JobId, LockToken)> {
        let now = Instant::now();
        let mut jobs = self.lock();
        jobs.iter_mut()
            .filter(|(_, t)| now.duration_since(t.renewed_at) >= older_than)
            .map(|(id, t)| {
                t.renewed_at = now;
                (id.clone(), t.token.clone())
            })
            .collect()
    }

    /// Cancels the token of a job whose lock held with `token` was lost; true when that run is
    /// still tracked. A later run of the same job (taken again under another token while the
    /// renewal was in flight) holds a lock of its own and is left alone.
    fn lost(&self, id: &JobId, token: &LockToken) -> bool {
        self.lock().get(id).is_some_and(|t| {
            if t.token != *token {
                return false;
            }
            t.reason.set(CancelReason::LockLost);
            t.cancel.cancel();
            true
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, Tracked>> {
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> JobId {
        JobId::custom(s).expect("job id")
    }

    #[tokio::test]
    async fn a_finished_run_does_not_untrack_a_later_run_of_the_same_job() {
        let tracker = LockTracker::default();
        let (old, new) = (LockToken::new("old"), LockToken::new("new"));
        tracker.track(
            id("job-7"),
            old.clone(),
            CancellationToken::new(),
            CancelCell::default(),
        );
        // The lock was lost, the job came back and this worker took it again.
        tracker.track(
            id("job-7"),
            new.clone(),
            CancellationToken::new(),
            CancelCell::default(),
        );
        tracker.untrack(&id("job-7"), &old);
        let due = tracker.due(Duration::ZERO);
        assert_eq!(due, vec![(id("job-7"), new.clone())]);
        tracker.untrack(&id("job-7"), &new);
        assert!(tracker.due(Duration::ZERO).is_empty());
    }

    #[tokio::test]
    async fn a_stale_lost_lock_does_not_cancel_a_later_run_of_the_same_job() {
        let tracker = LockTracker::default();
        let (old, new) = (LockToken::new("old"), LockToken::new("new"));
        let (cancel, reason) = (CancellationToken::new(), CancelCell::default());
        // The renewal was sent for the old run; meanwhile the job was taken again.
        tracker.track(id("job-7"), new.clone(), cancel.clone(), reason.clone());
        assert!(!tracker.lost(&id("job-7"), &old));
        assert!(!cancel.is_cancelled() && reason.get().is_none());
        assert!(tracker.lost(&id("job-7"), &new));
        assert!(cancel.is_cancelled() && reason.lock_lost());
    }
}
