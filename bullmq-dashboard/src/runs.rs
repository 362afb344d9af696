//! Bulk runs (every job of a state, or a search's matches): each runs in a task of its own,
//! and its progress is kept here for the run's page to show while it works.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bullmq::job::JobState;

use crate::bulk_action::BulkAction;

/// Runs kept for their pages; older ones are forgotten.
const KEPT: usize = 64;

/// One bulk run's description and progress.
#[derive(Debug)]
pub(crate) struct Run {
    /// What it does.
    pub(crate) what: NewRun,
    done: AtomicU64,
    failed: AtomicU64,
    finished: AtomicBool,
    /// Why it stopped before the end, if it did.
    stopped: Mutex<Option<String>>,
}

impl Run {
    /// Sets the jobs acted on so far (a batch's progress, counted by the store).
    pub(crate) fn set_done(&self, done: u64) {
        self.done.store(done, Ordering::Relaxed);
    }

    /// Adds `n` jobs acted on.
    pub(crate) fn add_done(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Records why the run stopped early.
    pub(crate) fn stop(&self, why: String) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
    }

    /// Why the run stopped early, if it did.
    pub(crate) fn stopped(&self) -> Option<String> {
        self.stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Jobs acted on so far.
    pub(crate) fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Jobs the action failed on so far (gone, moved or locked meanwhile).
    pub(crate) fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Whether the run has finished.
    pub(crate) fn finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// Counts one job, acted on or not.
    pub(crate) fn step(&self, ok: bool) {
        if ok {
            self.done.fetch_add(1, Ordering::Relaxed);
        } else {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Marks the run finished.
    pub(crate) fn finish(&self) {
        self.finished.store(true, Ordering::Release);
    }
}

/// The runs of this process, newest last.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    next: AtomicU64,
    kept: Mutex<VecDeque<(u64, Arc<Run>)>>,
}

/// What a run does, on which jobs.
#[derive(Debug)]
pub(crate) struct NewRun {
    pub(crate) connection: String,
    pub(crate) queue: String,
    pub(crate) action: BulkAction,
    pub(crate) state: JobState,
    /// The search it runs on, if any (else every job of the state).
    pub(crate) needle: Option<String>,
    /// Jobs matched when it started.
    pub(crate) total: u64,
}

impl Runs {
    /// Registers a run; answers its number and its progress.
    pub(crate) fn start(&self, new: NewRun) -> (u64, Arc<Run>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let run = Arc::new(Run {
            what: new,
            done: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            stopped: Mutex::new(None),
        });
        // A poisoned lock only means another request panicked; the list is still whole.
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back((id, Arc::clone(&run)));
        (id, run)
    }

    /// The run numbered `id`, if still kept.
    pub(crate) fn get(&self, id: u64) -> Option<Arc<Run>> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.iter()
            .find(|(n, _)| *n == id)
            .map(|(_, run)| Arc::clone(run))
    }
}
