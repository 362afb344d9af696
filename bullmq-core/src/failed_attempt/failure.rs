//! A failed attempt as the caller reports it ([`JobFailure`]), and what failing it did
//! ([`FailOutcome`]).

use std::fmt;
use std::time::Duration;

use crate::backend::{Finished, NextJob};

/// Why a job attempt failed: what Node.js reads from the `Error` given to `moveToFailed`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFailure {
    /// The error message, stored as `failedReason`.
    pub message: String,
    /// The stack trace, appended to the job's `stacktrace` when present.
    pub stack: Option<String>,
    /// Fail for good whatever attempts remain (upstream: an `UnrecoverableError`).
    pub unrecoverable: bool,
}

impl JobFailure {
    /// A failure with `message` and no stack trace.
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            ..Self::default()
        }
    }

    /// Sets the stack trace.
    #[must_use]
    pub fn stack(mut self, stack: impl Into<String>) -> Self {
        self.stack = Some(stack.into());
        self
    }

    /// Marks the failure unrecoverable: no retry.
    #[must_use]
    pub fn unrecoverable(mut self) -> Self {
        self.unrecoverable = true;
        self
    }
}

impl fmt::Display for JobFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JobFailure {}

/// What [`JobRef::move_to_failed`](crate::JobRef::move_to_failed) did with the job.
#[derive(Debug, Clone, PartialEq)]
pub enum FailOutcome {
    /// No attempts left (or unrecoverable): the job is failed.
    Failed(Finished),
    /// Attempts remain and the backoff asked for a wait: the job is delayed by `delay`.
    RetryDelayed {
        /// The backoff delay.
        delay: Duration,
        /// The next job, when one was asked for.
        next: Option<NextJob>,
    },
    /// Attempts remain with no backoff delay: the job is back in wait.
    Retried,
}
