//! The one rule every listing of jobs follows (`get_jobs_checked`, `paginate`): a job whose
//! stored fields cannot be read is reported beside the others instead of failing the page,
//! since another runtime may have written it and the rest of the page is still good.

use super::{Job, JobDecodeError, JobId};
use crate::{Error, Result};

/// Sorts one job read for a listing: a readable job goes to `jobs`, one that cannot be read
/// to `undecodable` with the reason, a job that is gone nowhere. Any other error (the store
/// did not answer, say) is returned: it is not about this job, so the page cannot be trusted.
///
/// # Errors
///
/// `read`'s error when it is not [`Error::JobDecode`].
pub fn sort_listed(
    id: &JobId,
    read: Result<Option<Job>>,
    jobs: &mut Vec<Job>,
    undecodable: &mut Vec<(JobId, JobDecodeError)>,
) -> Result<()> {
    match read {
        Ok(Some(job)) => jobs.push(job),
        Ok(None) => {}
        Err(Error::JobDecode(reason)) => undecodable.push((id.clone(), reason)),
        Err(other) => return Err(other),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn bad(id: &str) -> JobDecodeError {
        JobDecodeError {
            job_id: id.to_owned(),
            field: "opts",
            reason: "not an object".to_owned(),
        }
    }

    #[test]
    fn sorts_each_kind_of_read() {
        let (mut jobs, mut undecodable) = (Vec::new(), Vec::new());
        let job = Job::new("n", "{}".to_owned(), crate::JobOptions::new(), 1);
        sort_listed(
            &JobId::from("1"),
            Ok(Some(job)),
            &mut jobs,
            &mut undecodable,
        )
        .unwrap();
        sort_listed(&JobId::from("2"), Ok(None), &mut jobs, &mut undecodable).unwrap();
        sort_listed(
            &JobId::from("3"),
            Err(bad("3").into()),
            &mut jobs,
            &mut undecodable,
        )
        .unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(undecodable, vec![(JobId::from("3"), bad("3"))]);
        let other = Error::Closed("queue");
        assert!(sort_listed(&JobId::from("4"), Err(other), &mut jobs, &mut undecodable).is_err());
    }
}
