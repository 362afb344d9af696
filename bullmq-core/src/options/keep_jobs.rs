//! Which finished jobs to keep: `removeOnComplete` / `removeOnFail`.

use std::time::Duration;

/// Retention of finished jobs, in each of the forms Node.js accepts.
///
/// | Rust | stored as | meaning |
/// |---|---|---|
/// | `RemoveAll` | `true` | remove the job as soon as it finishes |
/// | `KeepAll` | `false` | keep every job (the default) |
/// | `Newest(n)` | `n` | keep the newest `n` |
/// | `Policy { age, count, limit }` | `{age?, count?, limit?}` | keep jobs younger than `age` and/or the newest `count`; remove at most `limit` per run |
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepJobs {
    /// `true`.
    RemoveAll,
    /// `false`.
    KeepAll,
    /// A bare number.
    Newest(u64),
    /// The object form.
    Policy {
        /// Maximum age; stored in whole seconds.
        age: Option<Duration>,
        /// Maximum number of jobs to keep.
        count: Option<u64>,
        /// Maximum number of jobs removed in one go (only with `age`).
        limit: Option<u64>,
    },
}

impl KeepJobs {
    /// `{count}`.
    #[must_use]
    pub fn count(count: u64) -> Self {
        Self::Policy {
            age: None,
            count: Some(count),
            limit: None,
        }
    }

    /// `{age}`.
    #[must_use]
    pub fn age(age: Duration) -> Self {
        Self::Policy {
            age: Some(age),
            count: None,
            limit: None,
        }
    }

    pub(crate) fn problem(&self) -> Option<String> {
        match self {
            Self::Policy {
                age: None,
                count: None,
                ..
            } => Some("the object form needs `age` or `count`".to_owned()),
            Self::Policy {
                age: None,
                limit: Some(_),
                ..
            } => Some("`limit` only applies together with `age`".to_owned()),
            _ => None,
        }
    }
}
