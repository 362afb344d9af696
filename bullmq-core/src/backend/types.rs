//! Small value types shared by several backend sections.

use std::fmt;
use std::time::Duration;

/// The token a worker holds a job's lock with (upstream: a UUID per worker, suffixed per job).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LockToken(String);

impl LockToken {
    /// Wraps a token.
    #[must_use]
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LockToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The id of an entry of the queue's event stream (`<ms>-<seq>` on Redis, a sequence number on
/// PostgreSQL), or `$` for "only new events".
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(String);

impl EventId {
    /// Only events added from now on.
    #[must_use]
    pub fn latest() -> Self {
        Self("$".to_owned())
    }

    /// Wraps an id.
    #[must_use]
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A rate limit: at most `max` jobs per `duration`, across all workers of the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimiter {
    /// Jobs allowed per window.
    pub max: u64,
    /// The window.
    pub duration: Duration,
}

/// Which of a parent's child lists an operation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DependencyKind {
    /// Children that completed (`processed`).
    Processed,
    /// Children not finished yet (`unprocessed`).
    Unprocessed,
    /// Children that failed with `ignoreDependencyOnFailure` (`ignored`).
    Ignored,
    /// Children that failed with `continueParentOnFailure` or similar (`failed`).
    Failed,
}

impl DependencyKind {
    /// The name upstream uses.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Processed => "processed",
            Self::Unprocessed => "unprocessed",
            Self::Ignored => "ignored",
            Self::Failed => "failed",
        }
    }
}

/// A slice of a list, Redis style: `start..=end`, where negative indexes count from the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Range {
    /// First index.
    pub start: i64,
    /// Last index, inclusive; `-1` is the last element.
    pub end: i64,
    /// Oldest first when true.
    pub asc: bool,
}

impl Range {
    /// Everything, newest first (upstream's default for getters).
    pub const ALL: Self = Self {
        start: 0,
        end: -1,
        asc: false,
    };

    /// Everything, oldest first: a job's logs in the order they were written, as Node.js's
    /// `getJobLogs(id)` reads them by default.
    ///
    /// ```
    /// use bullmq_core::backend::Range;
    ///
    /// assert_eq!(Range::ALL_OLDEST_FIRST, Range { start: 0, end: -1, asc: true });
    /// ```
    pub const ALL_OLDEST_FIRST: Self = Self {
        asc: true,
        ..Self::ALL
    };
}
