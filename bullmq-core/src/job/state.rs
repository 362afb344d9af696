//! Job states and the names of the sets that hold them.

use std::fmt;
use std::str::FromStr;

/// Where a job is in its life.
///
/// ```text
///  add ──► waiting / prioritized ──► active ──► completed
///   │            ▲                   │  │
///   ├─► delayed ─┘◄── retry/backoff ─┘  └──► failed
///   └─► waiting-children ──(children done)──► waiting
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobState {
    /// Ready, in arrival order (`waiting`).
    Waiting,
    /// Ready, ordered by priority (`prioritized`).
    Prioritized,
    /// Waiting for its delay to pass (`delayed`).
    Delayed,
    /// Held by a worker (`active`).
    Active,
    /// Finished successfully (`completed`).
    Completed,
    /// Finished with a failure (`failed`).
    Failed,
    /// A parent waiting for its children (`waiting-children`).
    WaitingChildren,
}

impl JobState {
    /// Every state, in upstream's order of appearance.
    pub const ALL: [Self; 7] = [
        Self::Waiting,
        Self::Prioritized,
        Self::Delayed,
        Self::Active,
        Self::Completed,
        Self::Failed,
        Self::WaitingChildren,
    ];

    /// The name upstream uses.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Waiting => "waiting",
            Self::Prioritized => "prioritized",
            Self::Delayed => "delayed",
            Self::Active => "active",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::WaitingChildren => "waiting-children",
        }
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of upstream's job states or types.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown job state {0:?}")]
pub struct UnknownState(pub String);

impl FromStr for JobState {
    type Err = UnknownState;

    fn from_str(s: &str) -> Result<Self, UnknownState> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_owned()))
    }
}

/// The two ways a job can finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishedState {
    /// `completed`.
    Completed,
    /// `failed`.
    Failed,
}

impl FinishedState {
    /// The name upstream uses.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }
}

impl From<FinishedState> for JobState {
    fn from(s: FinishedState) -> Self {
        match s {
            FinishedState::Completed => Self::Completed,
            FinishedState::Failed => Self::Failed,
        }
    }
}

/// What the getters and counters accept: a state, or one of the two aliases upstream keeps
/// (`wait` for `waiting`, `repeat` for the scheduler set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobType {
    /// A job state.
    State(JobState),
    /// `wait`, the same set as `waiting`.
    Wait,
    /// `repeat`, the scheduler set.
    Repeat,
}

impl JobType {
    /// The name upstream uses.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::State(s) => s.as_str(),
            Self::Wait => "wait",
            Self::Repeat => "repeat",
        }
    }
}

impl From<JobState> for JobType {
    fn from(s: JobState) -> Self {
        Self::State(s)
    }
}

impl FromStr for JobType {
    type Err = UnknownState;

    fn from_str(s: &str) -> Result<Self, UnknownState> {
        match s {
            "wait" => Ok(Self::Wait),
            "repeat" => Ok(Self::Repeat),
            other => other.parse().map(Self::State),
        }
    }
}
