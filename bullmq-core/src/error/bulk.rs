//! What a bulk add that failed part way did: which jobs were added, which were refused, and
//! which may or may not have been written.

use std::fmt;

use crate::{Error, JobId};

/// A job of a bulk that the store added (or, for a duplicate or deduplicated job, answered
/// with the id of the job that already exists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedJob {
    /// Its position in the input.
    pub index: usize,
    /// The id the store gave it.
    pub id: JobId,
}

/// A job of a bulk that was refused: it was not written.
#[derive(Debug)]
pub struct RefusedJob {
    /// Its position in the input; `None` when the store refused the bulk as a whole without
    /// naming a job (a PostgreSQL statement that failed: then no job of it was written).
    pub index: Option<usize>,
    /// Why: the typed error adding it alone would have returned.
    pub error: Error,
}

/// Jobs of a bulk that were sent but whose answer never came (the connection was lost):
/// each may or may not have been written.
#[derive(Debug)]
pub struct UnknownJobs {
    /// Their positions in the input, in order.
    pub indices: Vec<usize>,
    /// What cut the answer off (a `Connection` or `Timeout` backend error).
    pub error: Error,
}

/// A bulk add ([`Queue::add_bulk`](crate::Queue::add_bulk),
/// [`AddJobs::add_jobs`](crate::backend::AddJobs::add_jobs)) that did not add every job.
///
/// It tells, by input index, what happened to each job, so that a retry adds nothing twice:
/// retry exactly the jobs of [`to_retry`](Self::to_retry). Jobs in [`unknown`](Self::unknown)
/// may have been written: retry them only if they have custom ids (a custom id already taken
/// answers the existing job instead of adding another), or look them up first.
///
/// ```
/// use bullmq_core::error::{AddedJob, BulkAddError, RefusedJob};
/// use bullmq_core::{Error, JobId, ScriptError, ScriptErrorCode};
///
/// let refusal = ScriptError::new(ScriptErrorCode::ParentNotFound, "addJob", "");
/// let err = BulkAddError {
///     total: 3,
///     added: vec![
///         AddedJob { index: 0, id: JobId::from("1") },
///         AddedJob { index: 2, id: JobId::from("2") },
///     ],
///     refused: vec![RefusedJob { index: Some(1), error: Error::from(refusal) }],
///     unknown: None,
/// };
/// assert_eq!(err.to_retry(), [1]);
/// assert!(err.to_string().starts_with("added 2 of 3 jobs"));
/// ```
#[derive(Debug)]
pub struct BulkAddError {
    /// How many jobs the bulk had.
    pub total: usize,
    /// The jobs that were added, in input order.
    pub added: Vec<AddedJob>,
    /// The jobs that were refused, in input order (one entry without an index when the
    /// store refused the whole bulk).
    pub refused: Vec<RefusedJob>,
    /// The jobs whose outcome is not known, if any.
    pub unknown: Option<UnknownJobs>,
}

impl BulkAddError {
    /// A bulk of `total` jobs refused as a whole before anything of it was written, because
    /// of the jobs in `refused`.
    #[must_use]
    pub fn nothing_added(total: usize, refused: Vec<RefusedJob>) -> Self {
        Self {
            total,
            added: Vec::new(),
            refused,
            unknown: None,
        }
    }

    /// A bulk of `total` jobs whose every outcome is unknown: the answer was lost (`error`)
    /// after the bulk may have been written.
    #[must_use]
    pub fn all_unknown(total: usize, error: Error) -> Self {
        Self {
            total,
            added: Vec::new(),
            refused: Vec::new(),
            unknown: Some(UnknownJobs {
                indices: (0..total).collect(),
                error,
            }),
        }
    }

    /// The input indices that were certainly not written: the refused jobs, and those not
    /// sent because of them. Retrying these (fixed, or without the refused ones) adds no job
    /// twice.
    #[must_use]
    pub fn to_retry(&self) -> Vec<usize> {
        let mut settled = vec![false; self.total];
        for index in self
            .added
            .iter()
            .map(|a| a.index)
            .chain(self.unknown.iter().flat_map(|u| u.indices.iter().copied()))
        {
            if let Some(s) = settled.get_mut(index) {
                *s = true;
            }
        }
        (0..self.total).filter(|i| !settled[*i]).collect()
    }

    /// The first refusal's index (if it names one) and error.
    fn first_refusal(&self) -> Option<&RefusedJob> {
        self.refused.first()
    }
}

impl std::error::Error for BulkAddError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.first_refusal()
            .map(|r| &r.error as &(dyn std::error::Error + 'static))
            .or_else(|| {
                self.unknown
                    .as_ref()
                    .map(|u| &u.error as &(dyn std::error::Error + 'static))
            })
    }
}

/// `0, 1, 2` (at most eight, then `…`).
struct Indices<'a>(&'a [usize]);

impl fmt::Display for Indices<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, i) in self.0.iter().take(8).enumerate() {
            if n > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{i}")?;
        }
        if self.0.len() > 8 {
            write!(f, ", … ({} in all)", self.0.len())?;
        }
        Ok(())
    }
}

impl fmt::Display for BulkAddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "added {} of {} jobs", self.added.len(), self.total)?;
        let named: Vec<usize> = self.refused.iter().filter_map(|r| r.index).collect();
        if let Some(first) = self.first_refusal() {
            match first.index {
                Some(i) if named.len() == 1 => {
                    write!(f, "; job {i} was refused ({})", first.error)?;
                }
                Some(_) => write!(
                    f,
                    "; jobs {} were refused (the first: {})",
                    Indices(&named),
                    first.error
                )?,
                None => write!(f, "; the store refused the bulk ({})", first.error)?,
            }
        }
        if let Some(unknown) = &self.unknown {
            write!(
                f,
                "; whether jobs {} were added is unknown ({}): look them up, or retry them only \
                 if they have custom ids",
                Indices(&unknown.indices),
                unknown.error
            )?;
        }
        let retry = self.to_retry();
        if !retry.is_empty() {
            write!(
                f,
                "; fix or drop the refused jobs and retry only the jobs at indices {} \
                 (`BulkAddError::to_retry`), the others are in `added`",
                Indices(&retry)
            )?;
        }
        f.write_str(".")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ScriptError, ScriptErrorCode};

    fn refusal(index: usize) -> RefusedJob {
        let e = ScriptError::new(ScriptErrorCode::ParentNotFound, "addJob", "");
        RefusedJob {
            index: Some(index),
            error: e.into(),
        }
    }

    #[test]
    fn names_every_refusal_and_the_unknown_jobs() {
        let err = BulkAddError {
            total: 6,
            added: vec![AddedJob {
                index: 0,
                id: JobId::from("1"),
            }],
            refused: vec![refusal(1), refusal(3)],
            unknown: Some(UnknownJobs {
                indices: vec![4, 5],
                error: Error::Closed("connection"),
            }),
        };
        assert_eq!(err.to_retry(), [1, 2, 3]);
        assert_eq!(
            err.to_string(),
            "added 1 of 6 jobs; jobs 1, 3 were refused (the first: Missing key for parent job ?. \
             addJob); whether jobs 4, 5 were added is unknown (the connection is closed): look \
             them up, or retry them only if they have custom ids; fix or drop the refused jobs \
             and retry only the jobs at indices 1, 2, 3 (`BulkAddError::to_retry`), the others \
             are in `added`."
        );
    }

    #[test]
    fn long_index_lists_are_cut() {
        let err = BulkAddError::nothing_added(
            20,
            vec![RefusedJob {
                index: None,
                error: Error::Closed("queue"),
            }],
        );
        assert_eq!(err.to_retry().len(), 20);
        assert!(
            err.to_string().starts_with(
                "added 0 of 20 jobs; the store refused the bulk (the queue is closed); fix or \
                 drop the refused jobs and retry only the jobs at indices 0, 1, 2, 3, 4, 5, 6, \
                 7, … (20 in all)"
            ),
            "{err}"
        );
    }
}
