//! The jobs in progress whose locks a worker keeps alive, by id: what lock renewal extends
//! and what a lost lock or a cancellation reaches.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::cancel::{CancelCell, CancelReason};
use crate::JobId;
use crate::backend::LockToken;

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
    pub(crate) fn due(&self, older_than: Duration) -> Vec<(JobId, LockToken)> {
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
    pub(crate) fn lost(&self, id: &JobId, token: &LockToken) -> bool {
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
