//! Small value types shared by several backend sections.

use std::fmt;
use std::time::Duration;

/// `new`, `as_str` and `Display` of a value the stores carry as text, with their docs.
macro_rules! text_value {
    ($name:ident, $new_doc:literal, $as_str_doc:literal) => {
        impl $name {
            #[doc = $new_doc]
            #[must_use]
            pub fn new(text: impl Into<String>) -> Self {
                Self(text.into())
            }

            #[doc = $as_str_doc]
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

/// The token a worker holds a job's lock with (upstream: a UUID per worker, suffixed per job).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LockToken(String);

text_value!(LockToken, "Wraps a token.", "The token as text.");

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
}

text_value!(EventId, "Wraps an id.", "The id as text.");

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
