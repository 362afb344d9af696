//! Actions on one job: retry, promote, remove, update its data.

use axum::extract::{Form, Path};
use axum::response::Response;
use bullmq::JobId;
use bullmq::backend::ReprocessOptions;
use bullmq::job::{FinishedState, JobState};

use super::Fields;
use crate::error::DashboardError;
use crate::queue_route::QueueRoute;
use crate::urls;

/// `POST /c/{connection}/q/{queue}/jobs/{id}/{retry|promote|remove|update}`.
pub(crate) async fn job_action(
    route: QueueRoute,
    Path((_, _, id, action)): Path<(String, String, String, String)>,
    Form(fields): Form<Fields>,
) -> Result<Response, DashboardError> {
    let opened = route.guard(&fields).await?;
    let ctx = &route.ctx;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let job_id = JobId::from(id.as_str());
    let job = opened.queue.job(job_id.clone());
    let back = match action.as_str() {
        "retry" => {
            let state = match opened.queue.get_job_state(&job_id).await? {
                Some(JobState::Failed) => FinishedState::Failed,
                Some(JobState::Completed) => FinishedState::Completed,
                Some(other) => {
                    return Err(DashboardError::bad(
                        "id",
                        format!("job {id:?} is {}, not finished", other.as_str()),
                        "retry a failed or completed job",
                    ));
                }
                None => return Err(DashboardError::NotFound),
            };
            job.retry(
                state,
                ReprocessOptions {
                    reset_attempts_made: true,
                    reset_attempts_started: true,
                },
            )
            .await?;
            format!("{}?done=retried", urls::job(c, n, &id))
        }
        "update" => {
            let data = super::json_field(&fields, "data")?;
            if opened.queue.get_job_state(&job_id).await?.is_none() {
                return Err(DashboardError::NotFound);
            }
            job.update_data(&data).await?;
            format!("{}?done=updated%20data", urls::job(c, n, &id))
        }
        "promote" => {
            job.promote().await?;
            format!("{}?done=promoted", urls::job(c, n, &id))
        }
        "remove" => {
            if !opened.queue.remove(&job_id, false).await? {
                return Err(DashboardError::bad(
                    "id",
                    format!("job {id:?} was not removed (it is gone, or locked by a worker)"),
                    "remove it once no worker holds it",
                ));
            }
            format!("{}?done=removed", urls::queue(c, n))
        }
        _ => return Err(DashboardError::NotFound),
    };
    tracing::info!(target: "bullmq_dashboard", connection = c, queue = n, job = %id, action = %action, "job action");
    Ok(ctx.redirect(&back))
}
