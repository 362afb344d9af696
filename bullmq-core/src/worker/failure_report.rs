//! A persistent failure, reported once per distinct cause and then again only after a growing
//! back-off (a refused `BZPOPMIN` would otherwise be reported ten times a second), and the
//! connection health it implies (`Worker::connections_healthy`).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::Error;

/// The first pause before the same cause is reported again; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(30);

/// The longest pause between two reports of one cause.
const MAX_BACKOFF: Duration = Duration::from_secs(600);

/// The state of one path (the blocking wait, or the fetches and other commands).
#[derive(Default)]
pub(crate) struct FailureReport {
    state: Mutex<Option<Failing>>,
}

/// A path that failed and has not succeeded since.
struct Failing {
    /// The error's text: what tells two causes apart.
    cause: String,
    /// When the same cause may be reported again.
    next_report: Instant,
    backoff: Duration,
}

impl FailureReport {
    /// Records a failure; true when it should be reported: a cause not seen in this run of
    /// failures, or one last reported a back-off ago.
    pub(crate) fn failed(&self, err: &Error) -> bool {
        self.failed_at(err, Instant::now())
    }

    fn failed_at(&self, err: &Error, now: Instant) -> bool {
        let cause = err.to_string();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match state.as_mut() {
            Some(failing) if failing.cause == cause => {
                if now < failing.next_report {
                    return false;
                }
                failing.backoff = (failing.backoff * 2).min(MAX_BACKOFF);
                failing.next_report = now + failing.backoff;
                true
            }
            _ => {
                *state = Some(Failing {
                    cause,
                    next_report: now + FIRST_BACKOFF,
                    backoff: FIRST_BACKOFF,
                });
                true
            }
        }
    }

    /// Records a success: the path is healthy again, and a later failure is news.
    pub(crate) fn recovered(&self) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Whether the path's last attempt succeeded (or none failed yet).
    pub(crate) fn is_healthy(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_report_per_cause_then_a_growing_back_off() {
        let report = FailureReport::default();
        let noperm = Error::Closed("noperm");
        let readonly = Error::Closed("readonly");
        let t0 = Instant::now();
        assert!(report.failed_at(&noperm, t0));
        assert!(!report.is_healthy());
        assert!(
            (0..100).all(|_| !report.failed_at(&noperm, t0)),
            "repeats are quiet"
        );
        assert!(report.failed_at(&readonly, t0), "a new cause is news");
        let t1 = t0 + FIRST_BACKOFF;
        assert!(
            report.failed_at(&readonly, t1),
            "reported again after the back-off"
        );
        assert!(
            !report.failed_at(&readonly, t1 + FIRST_BACKOFF),
            "the back-off doubled"
        );
        report.recovered();
        assert!(report.is_healthy());
        assert!(
            report.failed_at(&readonly, t1),
            "after a recovery, the cause is news again"
        );
    }
}
