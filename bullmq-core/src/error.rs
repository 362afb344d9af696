//! The one error type of bullmq, and the upstream script error codes.

use std::fmt;

use crate::codec::CodecError;
use crate::job::JobDecodeError;
use crate::options::ValidationError;

mod bulk;
mod too_large;

pub use bulk::{AddedJob, BulkAddError, RefusedJob, UnknownJobs};
pub use too_large::PayloadTooLarge;

/// Result alias used across bullmq.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a bullmq operation.
///
/// Control flow of a processor (delay, wait for children, rate limit, unrecoverable) is not an
/// error of this type: it is the processor's own result type.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The datastore failed: connection, protocol or server error.
    #[error("backend error: {0}")]
    Backend(Box<dyn BackendError>),
    /// A Lua script or SQL function refused the operation with one of upstream's codes.
    #[error("{0}")]
    Script(#[from] ScriptError),
    /// A value could not be encoded to, or decoded from, the shape Node.js BullMQ stores.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A job read from the datastore could not be decoded.
    #[error(transparent)]
    JobDecode(#[from] JobDecodeError),
    /// Input was rejected before anything was written.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The operation is not available on this backend (upstream does not implement it either).
    #[error("{operation} is not supported by the {backend} backend")]
    Unsupported {
        /// The operation that was asked for, in upstream's name.
        operation: &'static str,
        /// The backend that refused it.
        backend: &'static str,
    },
    /// Obliteration refused to go on (the queue is not paused, or has active jobs).
    #[error(transparent)]
    ObliterateRefused(#[from] crate::backend::ObliterateRefusal),
    /// The queue, worker or backend was closed.
    #[error("the {0} is closed")]
    Closed(&'static str),
    /// A bulk add did not add every job: what was added, refused or left unknown, by input
    /// index. Its [`backend_kind`](Error::backend_kind) is `None` even when a lost
    /// connection caused it, so that a retry of the whole bulk is never taken for safe.
    #[error(transparent)]
    Bulk(Box<BulkAddError>),
    /// A job is larger than the server accepts; it was refused before anything was sent.
    #[error(transparent)]
    TooLarge(#[from] PayloadTooLarge),
    /// The store refused a relay operation with one of upstream's relay codes.
    #[error(transparent)]
    Relay(#[from] crate::relay::RelayError),
}

impl From<BulkAddError> for Error {
    fn from(err: BulkAddError) -> Self {
        Self::Bulk(Box::new(err))
    }
}

/// Portable classification of a datastore failure, whatever the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendErrorKind {
    /// The server could not be reached, or the connection dropped.
    Connection,
    /// The operation did not finish in time.
    Timeout,
    /// The server answered with an error.
    Server,
    /// The server answered with something the client did not expect.
    Protocol,
    /// The store's schema is missing, too old or too new for this client.
    Schema,
    /// Anything else.
    Other,
}

/// A datastore error, boxed in [`Error::Backend`].
///
/// Backends implement it for their own error type, so a caller can branch on [`kind`](Self::kind)
/// without knowing the store, or downcast (`err.downcast_ref::<RedisError>()`) when it does.
pub trait BackendError: std::error::Error + Send + Sync + 'static {
    /// The portable classification of this error.
    fn kind(&self) -> BackendErrorKind;
}

impl Error {
    /// Wraps a backend's own error.
    pub fn backend(err: impl BackendError) -> Self {
        Self::Backend(Box::new(err))
    }

    /// The portable kind, when this is a datastore error.
    #[must_use]
    pub fn backend_kind(&self) -> Option<BackendErrorKind> {
        match self {
            Self::Backend(err) => Some(err.kind()),
            _ => None,
        }
    }

    /// True for a failure of the connection itself (the caller waits and tries again), as
    /// opposed to a refusal or a bad reply.
    pub(crate) fn is_connection_failure(&self) -> bool {
        matches!(
            self.backend_kind(),
            Some(BackendErrorKind::Connection | BackendErrorKind::Timeout)
        )
    }
}

/// The refusal codes that upstream's Lua scripts and SQL functions return (`ErrorCode`, -1..-11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScriptErrorCode {
    /// -1: the job key does not exist.
    JobNotFound,
    /// -2: the job's lock does not exist.
    LockNotFound,
    /// -3: the job is not in the state the operation needs.
    NotInState,
    /// -4: the job still has pending dependencies.
    PendingDependencies,
    /// -5: the parent job does not exist.
    ParentNotFound,
    /// -6: the lock is held by another token.
    LockMismatch,
    /// -7: the job already has another parent.
    ParentCannotBeReplaced,
    /// -8: the job belongs to a job scheduler and cannot be removed directly.
    BelongsToJobScheduler,
    /// -9: the job has at least one failed child.
    FailedChildren,
    /// -10: a scheduler iteration's job id already exists.
    SchedulerJobIdCollision,
    /// -11: both the current and the next scheduler slots already hold jobs.
    SchedulerJobSlotsBusy,
}

impl ScriptErrorCode {
    /// The numeric code upstream uses.
    #[must_use]
    pub const fn code(self) -> i64 {
        match self {
            Self::JobNotFound => -1,
            Self::LockNotFound => -2,
            Self::NotInState => -3,
            Self::PendingDependencies => -4,
            Self::ParentNotFound => -5,
            Self::LockMismatch => -6,
            Self::ParentCannotBeReplaced => -7,
            Self::BelongsToJobScheduler => -8,
            Self::FailedChildren => -9,
            Self::SchedulerJobIdCollision => -10,
            Self::SchedulerJobSlotsBusy => -11,
        }
    }
}

/// A code outside upstream's -1..-11 range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown script error code {0}")]
pub struct UnknownScriptCode(pub i64);

impl TryFrom<i64> for ScriptErrorCode {
    type Error = UnknownScriptCode;

    fn try_from(code: i64) -> Result<Self, UnknownScriptCode> {
        Ok(match code {
            -1 => Self::JobNotFound,
            -2 => Self::LockNotFound,
            -3 => Self::NotInState,
            -4 => Self::PendingDependencies,
            -5 => Self::ParentNotFound,
            -6 => Self::LockMismatch,
            -7 => Self::ParentCannotBeReplaced,
            -8 => Self::BelongsToJobScheduler,
            -9 => Self::FailedChildren,
            -10 => Self::SchedulerJobIdCollision,
            -11 => Self::SchedulerJobSlotsBusy,
            other => return Err(UnknownScriptCode(other)),
        })
    }
}

/// A script refusal with the context needed to say what failed, as upstream's messages do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// What the script answered.
    pub code: ScriptErrorCode,
    /// The operation, in upstream's name (`moveToFinished`, `addJob`, …).
    pub command: &'static str,
    /// The job the operation was about, when there is one.
    pub job_id: Option<String>,
    /// The parent key, for parent-related codes.
    pub parent_key: Option<String>,
    /// The state the operation expected, for `NotInState` and `LockMismatch`.
    pub state: Option<String>,
}

impl ScriptError {
    /// A refusal of `command` about `job_id`.
    #[must_use]
    pub fn new(code: ScriptErrorCode, command: &'static str, job_id: impl Into<String>) -> Self {
        Self {
            code,
            command,
            job_id: Some(job_id.into()),
            parent_key: None,
            state: None,
        }
    }
}

impl std::error::Error for ScriptError {}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let job = self.job_id.as_deref().unwrap_or("?");
        let parent = self.parent_key.as_deref().unwrap_or("?");
        let state = self.state.as_deref().unwrap_or("expected");
        let cmd = self.command;
        // The wording follows upstream's messages so logs read the same from both runtimes.
        match self.code {
            ScriptErrorCode::JobNotFound => write!(f, "Missing key for job {job}. {cmd}"),
            ScriptErrorCode::LockNotFound => write!(f, "Missing lock for job {job}. {cmd}"),
            ScriptErrorCode::NotInState => {
                write!(f, "Job {job} is not in the {state} state. {cmd}")
            }
            ScriptErrorCode::PendingDependencies => {
                write!(f, "Job {job} has pending dependencies. {cmd}")
            }
            ScriptErrorCode::ParentNotFound => {
                write!(f, "Missing key for parent job {parent}. {cmd}")
            }
            ScriptErrorCode::LockMismatch => {
                write!(f, "Lock mismatch for job {job}. Cmd {cmd} from {state}")
            }
            ScriptErrorCode::ParentCannotBeReplaced => {
                write!(f, "The parent job {parent} cannot be replaced. {cmd}")
            }
            ScriptErrorCode::BelongsToJobScheduler => write!(
                f,
                "Job {job} belongs to a job scheduler and cannot be removed directly. {cmd}"
            ),
            ScriptErrorCode::FailedChildren => write!(
                f,
                "Cannot complete job {job} because it has at least one failed child. {cmd}"
            ),
            ScriptErrorCode::SchedulerJobIdCollision => write!(
                f,
                "Cannot create job scheduler iteration - job ID already exists. {cmd}"
            ),
            ScriptErrorCode::SchedulerJobSlotsBusy => write!(
                f,
                "Cannot create job scheduler iteration - current and next time slots already have jobs. {cmd}"
            ),
        }
    }
}
