//! What a bulk action is (retry or remove, on every job of a state or on a search's
//! matches), which states it applies to, and how far a run on a search reaches. The bulk page,
//! the action that starts a run and the runs themselves share it.

use bullmq::job::JobState;

use crate::error::DashboardError;

/// The most jobs a bulk run on a search acts on.
pub(crate) const RUN_MAX: usize = 100_000;
/// How many of a state's jobs a bulk run's search reads on Redis, at most.
pub(crate) const RUN_SCAN: u64 = 100_000;

/// What a bulk action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BulkAction {
    Retry,
    Remove,
}

impl BulkAction {
    /// The action a form or query names (`retry` or `remove`).
    pub(crate) fn parse(text: Option<&str>) -> Result<Self, DashboardError> {
        match text {
            Some("retry") => Ok(Self::Retry),
            Some("remove") => Ok(Self::Remove),
            other => Err(DashboardError::bad(
                "action",
                format!("{:?} is not a bulk action", other.unwrap_or("")),
                "use retry or remove",
            )),
        }
    }

    /// Its name in forms and logs.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Retry => "retry",
            Self::Remove => "remove",
        }
    }

    /// The verb, as a button or heading says it.
    pub(crate) fn verb(self) -> &'static str {
        self.as_str()
    }

    /// The verb in the past tense.
    pub(crate) fn past(self) -> &'static str {
        match self {
            Self::Retry => "retried",
            Self::Remove => "removed",
        }
    }
}

/// Whether `action` applies to jobs in `state`.
pub(crate) fn check(action: BulkAction, state: JobState) -> Result<(), DashboardError> {
    let fits = match action {
        BulkAction::Retry => matches!(state, JobState::Failed | JobState::Completed),
        BulkAction::Remove => !matches!(state, JobState::Active | JobState::WaitingChildren),
    };
    if fits {
        Ok(())
    } else {
        Err(DashboardError::bad(
            "state",
            format!(
                "{} does not apply to {} jobs",
                action.as_str(),
                state.as_str()
            ),
            "retry failed or completed jobs; remove jobs that are neither active nor waiting for children",
        ))
    }
}
