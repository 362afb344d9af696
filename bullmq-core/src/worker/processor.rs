//! The processor contract: what a processor is given and what it may answer.
//!
//! Node.js processors return a value or throw; the special errors (`UnrecoverableError`,
//! `DelayedError`, `WaitingError`, `WaitingChildrenError`, `RateLimitError`) steer the job.
//! Here the processor returns a [`ProcessResult`] whose error side, [`JobError`], names each
//! of those outcomes, and the worker makes the move the outcome asks for.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::active_job::ActiveJob;
use crate::options::UnixMillis;

/// What a processor returns: the job's return value, or why the attempt did not complete.
///
/// The value is any `Serialize` type (a `serde_json::Value` unless said otherwise), stored as
/// JSON `returnvalue` the way `JSON.stringify` writes it; a
/// [`RawValue`](serde_json::value::RawValue) is stored as given.
pub type ProcessResult<T = serde_json::Value> = Result<T, JobError>;

/// A return value serialized as it is stored: the JSON text
/// [`json::to_string`](crate::json::to_string) writes for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnValue(String);

impl ReturnValue {
    /// `value` as JSON text; a value that cannot be serialized fails the attempt with the
    /// reason, as Node.js fails a job whose return value `JSON.stringify` rejects.
    ///
    /// # Errors
    ///
    /// [`JobError::Failed`] when `value`'s `Serialize` fails.
    pub fn new<T: serde::Serialize + ?Sized>(value: &T) -> Result<Self, JobError> {
        crate::json::to_string(value)
            .map(Self)
            .map_err(|e| JobError::failed(format!("could not encode the return value: {e}")))
    }

    /// The JSON text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a processor did not complete its job, and what the worker should do with it.
///
/// Any `std::error::Error` converts into [`JobError::Failed`] (so `?` works in a processor):
/// its message becomes `failedReason` and the chain of sources the stack trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// The attempt failed: the job is retried per its `attempts` and `backoff`, else failed.
    Failed {
        /// Stored as `failedReason`.
        message: String,
        /// Appended to the job's `stacktrace`.
        stack: Option<String>,
    },
    /// The job fails for good, whatever attempts remain (upstream: `UnrecoverableError`).
    Unrecoverable {
        /// Stored as `failedReason`.
        message: String,
    },
    /// Move the job to delayed until `until` (Unix ms), without counting an attempt
    /// (upstream: `job.moveToDelayed` + `DelayedError`). Build it from a typed instant with
    /// [`JobError::delay_until`]; `until` stays Unix ms for the code that matches it
    /// ([`UnixMillis::from`] types it).
    Delay {
        /// When the job is due again, Unix ms.
        until: u64,
    },
    /// Rate limit the whole queue for `delay` and put the job back in wait (upstream:
    /// `worker.rateLimit` + `RateLimitError`).
    RateLimited {
        /// How long the queue stays limited.
        delay: Duration,
    },
    /// Put the job back in wait (upstream: `job.moveToWait` + `WaitingError`).
    BackToWait,
    /// Park the job until its children finish (upstream: `job.moveToWaitingChildren` +
    /// `WaitingChildrenError`). When no child is pending any more, the job goes back to wait
    /// so that its processor runs again and sees the children's results.
    WaitingChildren,
}

impl JobError {
    /// A failed attempt with `message`; its stack trace is `Error: <message>`, since every
    /// failure Node.js records carries one.
    #[must_use]
    pub fn failed(message: impl Into<String>) -> Self {
        let message = message.into();
        Self::Failed {
            stack: Some(format!("Error: {message}")),
            message,
        }
    }

    /// Moves the job to delayed until `at` (Unix ms, a [`SystemTime`](std::time::SystemTime)
    /// or a [`chrono::DateTime`]), without counting an attempt: the typed way to build
    /// [`Delay`](Self::Delay).
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use bullmq_core::worker::JobError;
    ///
    /// let later = JobError::delay_until(SystemTime::now() + Duration::from_secs(60));
    /// assert!(matches!(later, JobError::Delay { .. }));
    /// ```
    #[must_use]
    pub fn delay_until(at: impl Into<UnixMillis>) -> Self {
        Self::Delay {
            until: at.into().get(),
        }
    }

    /// A failure that is not retried.
    #[must_use]
    pub fn unrecoverable(message: impl Into<String>) -> Self {
        Self::Unrecoverable {
            message: message.into(),
        }
    }
}

impl<E: std::error::Error> From<E> for JobError {
    fn from(err: E) -> Self {
        let message = err.to_string();
        let mut stack = format!("Error: {message}");
        let mut source = err.source();
        while let Some(cause) = source {
            stack.push_str("\n    caused by: ");
            stack.push_str(&cause.to_string());
            source = cause.source();
        }
        Self::Failed {
            message,
            stack: Some(stack),
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed { message, .. } | Self::Unrecoverable { message } => f.write_str(message),
            Self::Delay { until } => write!(f, "delayed until {until}"),
            Self::RateLimited { delay } => write!(f, "rate limited for {delay:?}"),
            Self::BackToWait => f.write_str("moved back to wait"),
            Self::WaitingChildren => f.write_str("waiting for children"),
        }
    }
}

/// Processes one job. Implemented for every
/// `Fn(ActiveJob<B>, CancellationToken) -> impl Future<Output = ProcessResult<T>>` where `T`
/// is any `Serialize` return value.
///
/// The token is cancelled when the worker loses the job's lock (another worker may then run
/// it) or is closed with force: a processor that can stop early should watch it.
pub trait Processor<B>: Send + Sync + 'static {
    /// Runs the job; its return value comes back serialized.
    fn process(
        &self,
        job: ActiveJob<B>,
        cancel: CancellationToken,
    ) -> impl Future<Output = ProcessResult<ReturnValue>> + Send;
}

impl<B, F, Fut, T> Processor<B> for F
where
    F: Fn(ActiveJob<B>, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ProcessResult<T>> + Send,
    T: serde::Serialize,
{
    fn process(
        &self,
        job: ActiveJob<B>,
        cancel: CancellationToken,
    ) -> impl Future<Output = ProcessResult<ReturnValue>> + Send {
        let run = self(job, cancel);
        async move { run.await.and_then(|value| ReturnValue::new(&value)) }
    }
}
