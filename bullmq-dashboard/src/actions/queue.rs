//! Actions on a queue: add a job, pause, resume, drain, clean, obliterate.

use std::time::Duration;

use axum::extract::{Form, Path};
use axum::response::Response;
use bullmq::JobOptions;

use super::{Fields, number};
use crate::error::DashboardError;
use crate::fields::parse_state;
use crate::queue_route::QueueRoute;
use crate::urls;

/// Jobs removed per obliterate round.
const OBLITERATE_BATCH: u32 = 1000;

/// `POST /c/{connection}/q/{queue}/{add|pause|resume|drain|clean|obliterate}`.
pub(crate) async fn queue_action(
    route: QueueRoute,
    Path((_, _, action)): Path<(String, String, String)>,
    Form(fields): Form<Fields>,
) -> Result<Response, DashboardError> {
    let opened = route.guard(&fields).await?;
    let ctx = &route.ctx;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let q = &opened.queue;
    let checked = |name: &str| fields.get(name).is_some_and(|v| v == "1" || v == "on");
    let done = match action.as_str() {
        "add" => {
            let name = fields.get("name").map(|s| s.trim()).unwrap_or("");
            if name.is_empty() {
                return Err(DashboardError::bad(
                    "name",
                    "it is empty",
                    "give the job a name",
                ));
            }
            let data = super::json_field(&fields, "data")?;
            let mut opts = JobOptions::default();
            if let Some(ms) = number(&fields, "delay", "give the delay in whole milliseconds")? {
                opts.delay = Some(Duration::from_millis(ms));
            }
            if let Some(p) = number(&fields, "priority", "give a whole-number priority")? {
                opts.priority = Some(u32::try_from(p).map_err(|_| {
                    DashboardError::bad(
                        "priority",
                        format!("{p} is too large"),
                        "give a priority up to 2097152",
                    )
                })?);
            }
            let job = q.add(name, &data, opts).await?;
            format!("added job {}", job.id.as_str())
        }
        "pause" => {
            q.pause().await?;
            "paused".to_owned()
        }
        "resume" => {
            q.resume().await?;
            "resumed".to_owned()
        }
        "drain" => {
            q.drain(checked("delayed")).await?;
            "drained".to_owned()
        }
        "clean" => {
            let state = parse_state("state", fields.get("state").map(String::as_str))?;
            let grace = number(&fields, "grace", "give the age in whole seconds")?.unwrap_or(0);
            let limit =
                number(&fields, "limit", "give a whole number (0 for no limit)")?.unwrap_or(0);
            let removed = q.clean(Duration::from_secs(grace), limit, state).await?;
            format!("cleaned {} {} job(s)", removed.len(), state.as_str())
        }
        "obliterate" => {
            if fields.get("confirm").map(String::as_str) != Some(n) {
                return Err(DashboardError::bad(
                    "confirm",
                    "it is not the queue's name",
                    "type the queue's name exactly to confirm",
                ));
            }
            q.obliterate(checked("force"), OBLITERATE_BATCH).await?;
            tracing::info!(target: "bullmq_dashboard", connection = c, queue = n, action = "obliterate", "queue action");
            return Ok(ctx.redirect("/"));
        }
        _ => return Err(DashboardError::NotFound),
    };
    tracing::info!(target: "bullmq_dashboard", connection = c, queue = n, action = %action, outcome = %done, "queue action");
    Ok(ctx.redirect(&format!("{}?done={}", urls::queue(c, n), urls::enc(&done))))
}
