//! Bulk actions on hand-picked jobs: the queue page's checkboxes, then retry, promote or
//! remove the ones ticked.

use axum::extract::Form;
use axum::response::Response;
use bullmq::JobId;
use bullmq::backend::ReprocessOptions;
use bullmq::job::{FinishedState, JobState};

use super::Fields;
use crate::error::DashboardError;
use crate::queue_route::QueueRoute;
use crate::urls;

/// The most jobs one selection acts on (a page of the list is far fewer).
const MAX_SELECTED: usize = 1000;

/// `POST /c/{connection}/q/{queue}/selected`: `action` (retry, promote or remove) on each
/// `id` field; a job gone, moved or locked meanwhile is counted as skipped.
pub(crate) async fn selected_action(
    route: QueueRoute,
    Form(pairs): Form<Vec<(String, String)>>,
) -> Result<Response, DashboardError> {
    let ctx = &route.ctx;
    // `id` repeats; every other field is single.
    let mut ids = Vec::new();
    let mut fields = Fields::new();
    for (key, value) in pairs {
        if key == "id" {
            ids.push(value);
        } else {
            fields.insert(key, value);
        }
    }
    let opened = route.guard(&fields).await?;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let action = fields.get("action").map(String::as_str).unwrap_or("");
    if !matches!(action, "retry" | "promote" | "remove") {
        return Err(DashboardError::bad(
            "action",
            format!("{action:?} is not an action on selected jobs"),
            "use retry, promote or remove",
        ));
    }
    if ids.is_empty() {
        return Err(DashboardError::bad(
            "id",
            "no job is selected",
            "tick the jobs to act on",
        ));
    }
    if ids.len() > MAX_SELECTED {
        return Err(DashboardError::bad(
            "id",
            format!("{} jobs are selected", ids.len()),
            "select at most 1000 jobs, or use the bulk action on the whole state",
        ));
    }
    let mut done = 0_usize;
    for id in &ids {
        let job_id = JobId::from(id.as_str());
        // Redis answers a removal of a missing job as done: look first, on both stores.
        let Some(state) = opened.queue.get_job_state(&job_id).await? else {
            continue;
        };
        let ok = match (action, state) {
            ("retry", JobState::Failed | JobState::Completed) => opened
                .queue
                .job(job_id)
                .retry(
                    if state == JobState::Failed {
                        FinishedState::Failed
                    } else {
                        FinishedState::Completed
                    },
                    ReprocessOptions {
                        reset_attempts_made: true,
                        reset_attempts_started: true,
                    },
                )
                .await
                .is_ok(),
            ("promote", JobState::Delayed) => opened.queue.job(job_id).promote().await.is_ok(),
            ("remove", _) => opened.queue.remove(&job_id, false).await.unwrap_or(false),
            _ => false,
        };
        done += usize::from(ok);
    }
    let past = match action {
        "retry" => "retried",
        "promote" => "promoted",
        _ => "removed",
    };
    let outcome = format!("{past} {done} of {} selected job(s)", ids.len());
    tracing::info!(target: "bullmq_dashboard", connection = c, queue = n, action, selected = ids.len(), done, "selected jobs action");
    let state = fields
        .get("state")
        .map_or(String::new(), |s| format!("state={}&", urls::enc(s)));
    Ok(ctx.redirect(&format!(
        "{}?{state}done={}",
        urls::queue(c, n),
        urls::enc(&outcome)
    )))
}
