//! Actions on a queue's job schedulers: upsert one (a cron pattern or an interval, with the
//! template's name and data) and remove one.

use std::time::Duration;

use axum::extract::{Form, Path};
use axum::response::Response;
use bullmq::scheduler::{RepeatOptions, SchedulerError};
use bullmq::{JobScheduler, JobTemplate};

use super::{Fields, json_field, number};
use crate::error::DashboardError;
use crate::queue_route::QueueRoute;
use crate::urls;

/// A scheduler's error: the store's as it is, a refused schedule as a 400.
fn refused(e: SchedulerError) -> DashboardError {
    match e {
        SchedulerError::Backend(e) => DashboardError::Store(e),
        other => DashboardError::bad(
            "schedule",
            other.to_string(),
            "give either a cron pattern (with an optional time zone) or an interval in ms",
        ),
    }
}

/// A trimmed text field, `None` when empty.
fn text<'f>(fields: &'f Fields, field: &str) -> Option<&'f str> {
    fields
        .get(field)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
}

/// The schedule the form gives: a pattern or an interval, exactly one.
fn schedule(fields: &Fields) -> Result<RepeatOptions, DashboardError> {
    let every = number(fields, "every", "give the interval in whole milliseconds")?;
    match (text(fields, "pattern"), every) {
        (Some(_), Some(_)) => Err(DashboardError::bad(
            "every",
            "both a pattern and an interval are given",
            "give one of them",
        )),
        (None, None | Some(0)) => Err(DashboardError::bad(
            "pattern",
            "neither a pattern nor an interval is given",
            "give a cron pattern such as `0 3 * * *`, or an interval in ms",
        )),
        (Some(pattern), None) => {
            let mut schedule = RepeatOptions::cron(pattern);
            schedule.tz = text(fields, "tz").map(str::to_owned);
            Ok(schedule)
        }
        (None, Some(ms)) => Ok(RepeatOptions::every(Duration::from_millis(ms))),
    }
}

/// `POST /c/{connection}/q/{queue}/schedulers`: creates or replaces a scheduler.
pub(crate) async fn upsert_scheduler(
    route: QueueRoute,
    Form(fields): Form<Fields>,
) -> Result<Response, DashboardError> {
    let ctx = &route.ctx;
    let opened = route.guard(&fields).await?;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let Some(id) = text(&fields, "id") else {
        return Err(DashboardError::bad(
            "id",
            "it is empty",
            "give the scheduler an id",
        ));
    };
    let schedule = schedule(&fields)?;
    let data = json_field(&fields, "data")?;
    let mut template = JobTemplate::default().data(data);
    template.name = text(&fields, "name").map(str::to_owned);
    let first = JobScheduler::new(opened.queue.backend().clone())
        .upsert(id, &schedule, template)
        .await
        .map_err(refused)?;
    let done = match first {
        Some(next) => format!("upserted {id}, next job {}", next.id.as_str()),
        None => format!("upserted {id}, no iteration left"),
    };
    tracing::info!(target: "bullmq_dashboard", connection = c, queue = n, scheduler = id, action = "upsert", "scheduler action");
    Ok(ctx.redirect(&format!(
        "{}?done={}",
        urls::queue_sub(c, n, "schedulers"),
        urls::enc(&done)
    )))
}

/// `POST /c/{connection}/q/{queue}/schedulers/{id}/remove`.
pub(crate) async fn remove_scheduler(
    route: QueueRoute,
    Path((_, _, id)): Path<(String, String, String)>,
    Form(fields): Form<Fields>,
) -> Result<Response, DashboardError> {
    let opened = route.guard(&fields).await?;
    let ctx = &route.ctx;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let removed = JobScheduler::new(opened.queue.backend().clone())
        .remove(&id)
        .await
        .map_err(refused)?;
    if !removed {
        return Err(DashboardError::NotFound);
    }
    tracing::info!(target: "bullmq_dashboard", connection = c, queue = n, scheduler = %id, action = "remove", "scheduler action");
    Ok(ctx.redirect(&format!(
        "{}?done={}",
        urls::queue_sub(c, n, "schedulers"),
        urls::enc(&format!("removed {id}"))
    )))
}
