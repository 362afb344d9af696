//! Lock renewal: one timer renews the locks of every job in progress with a single
//! `extendLocks` call (upstream: `LockManager`); a lock found lost cancels that job's token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::events::WorkerEvent;
use super::shared::Shared;
use crate::backend::{Backend, LockToken};
use crate::telemetry::spans;
use crate::{Error, JobId, ScriptError, ScriptErrorCode};
use tracing::Instrument;

/// A job in progress whose lock the worker keeps alive.
struct Tracked {
    token: LockToken,
    cancel: CancellationToken,
    renewed_at: Instant,
}

/// The jobs in progress, by id.
#[derive(Default)]
pub(crate) struct LockTracker {
    jobs: Mutex<HashMap<JobId, Tracked>>,
}

impl LockTracker {
    /// Starts keeping `id`'s lock alive; `cancel` is cancelled if the lock is lost.
    pub(crate) fn track(&self, id: JobId, token: LockToken, cancel: CancellationToken) {
        let tracked = Tracked {
            token,
            cancel,
            renewed_at: Instant::now(),
        };
        self.lock().insert(id, tracked);
    }

    /// Stops renewing `id`'s lock held with `token` (the job finished, or is about to). The
    /// token matters: after a lost lock this worker may hold the same job again, under another
    /// token, in another slot, and that run's lock must go on being renewed.
    pub(crate) fn untrack(&self, id: &JobId, token: &LockToken) {
        let mut jobs = self.lock();
        if jobs.get(id).is_some_and(|t| t.token == *token) {
            jobs.remove(id);
        }
    }

    /// Cancels every job's token (a forced close).
    pub(crate) fn cancel_all(&self) {
        for tracked in self.lock().values() {
            tracked.cancel.cancel();
        }
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

    /// Cancels the token of a job whose lock was lost; true when it was tracked.
    fn lost(&self, id: &JobId) -> bool {
        self.lock().get(id).is_some_and(|t| {
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
        let span = spans::extend_locks(shared.queue.name().as_str(), due.len());
        match backend
            .extend_locks(&due, shared.opts.lock_duration)
            .instrument(span.clone())
            .await
        {
            Ok(lost) => {
                for id in lost {
                    if shared.locks.lost(&id) {
                        spans::record_error(&span, "lock lost");
                        let _in = span.enter();
                        tracing::warn!(target: "bullmq", job_id = %id, "lock renewal failed: lock lost");
                        shared.emit(WorkerEvent::LockLost { job_id: id.clone() });
                        shared.emit_error(lock_lost(&id));
                    }
                }
            }
            Err(err) => {
                spans::record_error(&span, &err.to_string());
                shared.emit_error(err);
            }
        }
    }
}

/// The error reported for a lock that could not be renewed (upstream: "could not renew lock
/// for job <id>").
fn lock_lost(id: &JobId) -> Error {
    ScriptError {
        code: ScriptErrorCode::LockNotFound,
        command: "extendLocks",
        job_id: Some(id.to_string()),
        parent_key: None,
        state: Some("active".to_owned()),
    }
    .into()
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
        tracker.track(id("job-7"), old.clone(), CancellationToken::new());
        // The lock was lost, the job came back and this worker took it again.
        tracker.track(id("job-7"), new.clone(), CancellationToken::new());
        tracker.untrack(&id("job-7"), &old);
        let due = tracker.due(Duration::ZERO);
        assert_eq!(due, vec![(id("job-7"), new.clone())]);
        tracker.untrack(&id("job-7"), &new);
        assert!(tracker.due(Duration::ZERO).is_empty());
    }
}
