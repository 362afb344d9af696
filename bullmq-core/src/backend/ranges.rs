//! What Node.js' `Queue#getRanges` does with the pages a store returns, whichever the store:
//! a list's page read oldest first is turned around, and an id met twice is kept once.

use std::collections::HashSet;

use super::types::Range;
use crate::JobId;
use crate::codec::job_type_arg;
use crate::job::JobType;

/// The ids of several job types' pages of one [`Range`], merged as Node.js' `Queue#getRanges`
/// merges them: in the order the types were asked for, each id kept once, where first met.
///
/// Redis keeps `wait` and `active` in lists, which its `getRanges` script reads newest first
/// even when asked oldest first: their pages are turned around here. A store that reads those
/// types from the far end to match (PostgreSQL) asks [`reads_backwards`](Self::reads_backwards)
/// which pages to read that way.
///
/// ```
/// use bullmq_core::backend::{Range, RangeIds};
/// use bullmq_core::job::JobType;
/// use bullmq_core::{JobId, JobState};
///
/// let ids = |s: &[&str]| s.iter().map(|&i| JobId::from(i)).collect::<Vec<_>>();
/// let mut merged = RangeIds::new(Range::ALL_OLDEST_FIRST);
/// assert!(merged.reads_backwards(JobType::Wait));
/// merged.push(JobType::Wait, ids(&["3", "2"]));
/// merged.push(JobType::State(JobState::Waiting), ids(&["2", "3"]));
/// merged.push(JobType::State(JobState::Delayed), ids(&["7", "2"]));
/// assert_eq!(merged.into_ids(), ids(&["2", "3", "7"]));
/// ```
#[derive(Debug, Clone, Default)]
pub struct RangeIds {
    asc: bool,
    seen: HashSet<JobId>,
    ids: Vec<JobId>,
}

impl RangeIds {
    /// An empty answer for pages of `range`.
    #[must_use]
    pub fn new(range: Range) -> Self {
        Self {
            asc: range.asc,
            ..Self::default()
        }
    }

    /// True when `t`'s page is read from the newest end and turned around by
    /// [`push`](Self::push): the range is oldest first and `t` is a list on Redis (`wait`,
    /// `waiting`, `active`).
    #[must_use]
    pub fn reads_backwards(&self, t: JobType) -> bool {
        self.asc && matches!(job_type_arg(t), "wait" | "active")
    }

    /// Adds `t`'s page as the store returned it.
    pub fn push(&mut self, t: JobType, page: impl IntoIterator<Item = JobId>) {
        let mut page: Vec<JobId> = page.into_iter().collect();
        if self.reads_backwards(t) {
            page.reverse();
        }
        let seen = &mut self.seen;
        self.ids
            .extend(page.into_iter().filter(|id| seen.insert(id.clone())));
    }

    /// The merged ids.
    #[must_use]
    pub fn into_ids(self) -> Vec<JobId> {
        self.ids
    }
}
