//! Bulk actions on every job of a state: the count is shown first (the bulk page), then the
//! store works through them in bounded batches.

use std::time::Duration;

use axum::extract::{Form, Path, State};
use axum::response::Response;
use bullmq::backend::ReprocessOptions;
use bullmq::job::{FinishedState, JobState, JobType};

use super::{Fields, guard};
use crate::error::DashboardError;
use crate::pages::Opened;
use crate::pages::queue::parse_state;
use crate::request::Ctx;
use crate::runs::NewRun;
use crate::search::{self, Needle};
use crate::state::Shared;
use crate::urls;

/// The most jobs a bulk run on a search acts on.
pub(crate) const RUN_MAX: usize = 100_000;
/// How many of a state's jobs a bulk run's search reads on Redis, at most.
pub(crate) const RUN_SCAN: u64 = 100_000;

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

/// The finished state a retry of `state`'s jobs names (`check` has let only these through).
fn finished(state: JobState) -> FinishedState {
    if state == JobState::Failed {
        FinishedState::Failed
    } else {
        FinishedState::Completed
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
    if let Some(needle) = Needle::new(fields.get("q").map(String::as_str)) {
        return start_run(&inner, &ctx, opened, action, state, needle).await;
    }
    let q = &opened.queue;
    let before = q.get_job_count_by_types(&[JobType::State(state)]).await?;
    let touched = match action {
        BulkAction::Retry => {
            q.retry_jobs(finished(state), RETRY_BATCH, None).await?;
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

/// Finds every job matching `needle`, then acts on each in a task of its own; answers a
/// redirect to the run's page, which shows its progress.
async fn start_run(
    inner: &crate::state::Inner,
    ctx: &Ctx,
    opened: Opened<'_>,
    action: BulkAction,
    state: JobState,
    needle: Needle,
) -> Result<Response, DashboardError> {
    let (c, n) = (opened.conn.name.clone(), opened.name.as_str().to_owned());
    let found = search::find(&opened.queue, state, &needle, true, RUN_MAX, RUN_SCAN).await?;
    let (id, run) = inner.runs.start(NewRun {
        connection: c.clone(),
        queue: n.clone(),
        action,
        state,
        needle: needle.as_str().to_owned(),
        total: u64::try_from(found.ids.len()).unwrap_or(u64::MAX),
    });
    tracing::info!(target: "bullmq_dashboard", connection = %c, queue = %n, action = action.as_str(), state = state.as_str(), search = needle.as_str(), jobs = found.ids.len(), run = id, "bulk run started");
    let queue = opened.queue;
    tokio::spawn(async move {
        for job_id in found.ids {
            let ok = match action {
                BulkAction::Retry => queue
                    .job(job_id)
                    .retry(
                        finished(state),
                        ReprocessOptions {
                            reset_attempts_made: true,
                            reset_attempts_started: true,
                        },
                    )
                    .await
                    .is_ok(),
                BulkAction::Remove => queue.remove(&job_id, false).await.unwrap_or(false),
            };
            run.step(ok);
        }
        run.finish();
        tracing::info!(target: "bullmq_dashboard", connection = %run.what.connection, queue = %run.what.queue, action = run.what.action.as_str(), done = run.done(), failed = run.failed(), run = id, "bulk run finished");
    });
    Ok(ctx.redirect(&format!("{}/{id}", urls::queue_sub(&c, &n, "bulk/runs"))))
}
