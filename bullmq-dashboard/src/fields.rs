//! Fields that pages and actions both read from a query or a form.

use bullmq::job::JobState;

use crate::error::DashboardError;

/// A state named in a query or form.
pub(crate) fn parse_state(
    field: &'static str,
    text: Option<&str>,
) -> Result<JobState, DashboardError> {
    match text.filter(|t| !t.is_empty()) {
        None => Ok(JobState::Waiting),
        Some(t) => t.parse().map_err(|_| {
            DashboardError::bad(
                field,
                format!("{t:?} is not a job state"),
                "use waiting, prioritized, delayed, active, waiting-children, completed or failed",
            )
        }),
    }
}
