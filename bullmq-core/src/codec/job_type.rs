//! The names the count and range reads (`getCounts`, `getRanges` and their SQL twins) know
//! job types by: a shape both stores share.

use crate::JobState;
use crate::job::JobType;

/// The name `getCounts` and `getRanges` (and their SQL twins) know a job type by: upstream
/// sends `waiting` as `wait`, the list that holds waiting jobs; every other type by its own
/// name.
///
/// ```
/// use bullmq_core::codec::job_type_arg;
/// use bullmq_core::JobState;
/// use bullmq_core::job::JobType;
///
/// assert_eq!(job_type_arg(JobState::Waiting.into()), "wait");
/// assert_eq!(job_type_arg(JobType::Wait), "wait");
/// assert_eq!(job_type_arg(JobState::WaitingChildren.into()), "waiting-children");
/// ```
#[must_use]
pub const fn job_type_arg(t: JobType) -> &'static str {
    match t {
        JobType::State(JobState::Waiting) => "wait",
        other => other.as_str(),
    }
}
