//! Bulk actions on every job of a state: the count is shown first (the bulk page), then the
//! store works through them in bounded batches.

use std::time::Duration;

use axum::extract::{Form, Path, State};
use axum::response::Response;
use bullmq::job::{FinishedState, JobState, JobType};

use super::{Fields, guard};
use crate::error::DashboardError;
use crate::pages::queue::parse_state;
use crate::request::Ctx;
use crate::state::Shared;
use crate::urls;

/// Jobs one store call retries.
const RETRY_BATCH: u32 = 1000;

/// What a bulk action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BulkAction {
    Retry,
    Remove,
}

impl BulkAction {
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

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Retry => "retry",
            Self::Remove => "remove",
        }
    }

    pub(crate) fn verb(self) -> &'static str {
        self.as_str()
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

/// `POST /c/{connection}/q/{queue}/bulk`.
pub(crate) async fn bulk_action(
    State(inner): State<Shared>,
    Path((connection, queue)): Path<(String, String)>,
    ctx: Ctx,
    Form(fields): Form<Fields>,
) -> Result<Response, DashboardError> {
    let opened = guard(&inner, &ctx, &connection, &queue, &fields).await?;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let state = parse_state("state", fields.get("state").map(String::as_str))?;
    let action = BulkAction::parse(fields.get("action").map(String::as_str))?;
    check(action, state)?;
    let q = &opened.queue;
    let before = q.get_job_count_by_types(&[JobType::State(state)]).await?;
    let touched = match action {
        BulkAction::Retry => {
            let finished = if state == JobState::Failed {
                FinishedState::Failed
            } else {
                FinishedState::Completed
            };
            q.retry_jobs(finished, RETRY_BATCH, None).await?;
            let after = q.get_job_count_by_types(&[JobType::State(state)]).await?;
            before.saturating_sub(after)
        }
        // `clean` removes in bounded batches of its own.
        BulkAction::Remove => {
            u64::try_from(q.clean(Duration::ZERO, 0, state).await?.len()).unwrap_or(u64::MAX)
        }
    };
    let done = format!("{} {touched} {} job(s)", action.as_str(), state.as_str());
    tracing::info!(target: "bullmq_dashboard", connection = c, queue = n, action = action.as_str(), state = state.as_str(), touched, "bulk action");
    Ok(ctx.redirect(&format!(
        "{}?state={}&done={}",
        urls::queue(c, n),
        state.as_str(),
        urls::enc(&done)
    )))
}
