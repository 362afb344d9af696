//! Where a bounded scan stopped, as text a user can pass back.

use std::fmt;

use crate::JobState;

/// Where a [`scan`](fn@super::scan) stopped: the state it was in and how many of that state's
/// jobs it had passed. Its text form is `<state>:<offset>`, e.g. `waiting:500`.
///
/// ```
/// use bullmq_core::JobState;
/// use bullmq_core::search::ScanCursor;
///
/// let states = [JobState::Waiting, JobState::Failed];
/// let cursor = ScanCursor::parse("failed:40", &states).expect("a cursor a scan prints");
/// assert_eq!(cursor.to_string(), "failed:40");
/// assert!(ScanCursor::parse("active:1", &states).is_err(), "not a state searched");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanCursor {
    pub(super) state: JobState,
    pub(super) offset: u64,
}

impl ScanCursor {
    /// The cursor `text` names, which must be in one of `states` (those of the scan it
    /// resumes).
    ///
    /// # Errors
    /// [`BadCursor`] when `text` is not `<state>:<offset>` with a state among `states`.
    pub fn parse(text: &str, states: &[JobState]) -> Result<Self, BadCursor> {
        let bad = || BadCursor(text.to_owned());
        let (state, offset) = text.rsplit_once(':').ok_or_else(bad)?;
        let state = states
            .iter()
            .copied()
            .find(|s| s.as_str() == state)
            .ok_or_else(bad)?;
        Ok(Self {
            state,
            offset: offset.parse().map_err(|_| bad())?,
        })
    }

    /// The state the scan stopped in.
    #[must_use]
    pub fn state(&self) -> JobState {
        self.state
    }

    /// How many of the state's jobs the scan had passed.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

impl fmt::Display for ScanCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.state.as_str(), self.offset)
    }
}

/// A scan cursor that no scan of these states printed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the scan cursor {0:?} is not one a search printed: pass the `next` cursor of the search \
     it resumes (e.g. waiting:500), searching the same states"
)]
pub struct BadCursor(pub String);
