//! Which finished jobs to keep: `removeOnComplete` / `removeOnFail`.

use std::time::Duration;

/// Retention of finished jobs, in each of the forms Node.js accepts. Each is named after what
/// it stores: `Number(n)` and `policy_count(n)` keep the same jobs, but one is stored as `n`
/// and the other as `{"count":n}`, as Node.js stores `removeOnComplete: n` and
/// `removeOnComplete: {count: n}`.
///
/// | Rust | stored as | meaning |
/// |---|---|---|
/// | `RemoveAll` | `true` | remove the job as soon as it finishes |
/// | `KeepAll` | `false` | keep every job (the default) |
/// | `Number(n)` | `n` | keep the newest `n` |
/// | `policy_count(n)` | `{"count":n}` | keep the newest `n` |
/// | `policy_age(d)` | `{"age":secs}` | keep jobs younger than `d` |
/// | `Policy { age, count, limit }` | `{age?, count?, limit?}` | keep jobs younger than `age` and/or the newest `count`; remove at most `limit` per run |
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepJobs {
    /// `true`.
    RemoveAll,
    /// `false`.
    KeepAll,
    /// The bare number form, `n`: keep the newest `n`.
    Number(u64),
    /// The object form, `{age?, count?, limit?}`.
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
    /// The object form with only a count, stored `{"count":n}`: keep the newest `count`.
    #[must_use]
    pub fn policy_count(count: u64) -> Self {
        Self::Policy {
            age: None,
            count: Some(count),
            limit: None,
        }
    }

    /// The object form with only an age, stored `{"age":seconds}`: keep jobs younger than
    /// `age`.
    #[must_use]
    pub fn policy_age(age: Duration) -> Self {
        Self::Policy {
            age: Some(age),
            count: None,
            limit: None,
        }
    }

    /// Former name of the [`Number`](Self::Number) variant (a bare `n`), kept as a
    /// constructor so that `KeepJobs::Newest(n)` still builds; a `match` needs `Number`.
    #[deprecated(note = "renamed `KeepJobs::Number` (stored as a bare `n`)")]
    #[allow(non_snake_case)]
    #[must_use]
    pub const fn Newest(n: u64) -> Self {
        Self::Number(n)
    }

    /// Former name of [`policy_count`](Self::policy_count).
    #[deprecated(note = "stored as {\"count\":n}: use `KeepJobs::policy_count` (or \
                         `KeepJobs::Number` for a bare `n`)")]
    #[must_use]
    pub fn count(count: u64) -> Self {
        Self::policy_count(count)
    }

    /// Former name of [`policy_age`](Self::policy_age).
    #[deprecated(note = "use `KeepJobs::policy_age`")]
    #[must_use]
    pub fn age(age: Duration) -> Self {
        Self::policy_age(age)
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
