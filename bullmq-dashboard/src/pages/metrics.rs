//! A queue's per-minute completed and failed series, drawn on the server.

use axum::response::Response;
use bullmq::job::FinishedState;
use maud::html;

use super::layout::{page, queue_crumbs};
use crate::chart;
use crate::error::DashboardError;
use crate::queue_route::{Page, QueueRoute};
use crate::urls;

/// Minutes drawn.
const MINUTES: i64 = 60;

/// `GET /c/{connection}/q/{queue}/metrics`.
pub(crate) async fn metrics_page(mut route: QueueRoute) -> Result<Response, DashboardError> {
    let Page { view, opened, ctx } = route.page().await?;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let completed = opened
        .queue
        .get_metrics(FinishedState::Completed, 0, MINUTES - 1)
        .await?;
    let failed = opened
        .queue
        .get_metrics(FinishedState::Failed, 0, MINUTES - 1)
        .await?;
    // The store gives newest first; the chart reads left to right.
    let oldest_first = |d: &[u64]| d.iter().rev().copied().collect::<Vec<_>>();
    let body = html! {
        h1 { "Metrics of " (n) }
        p.muted { "Per minute, the last " (MINUTES) " minutes, as the workers recorded them (workers record metrics when their metrics option is set)." }
        (chart::series(&oldest_first(&completed.data), "completed", &format!("completed per minute (total {})", completed.total)))
        (chart::series(&oldest_first(&failed.data), "failed", &format!("failed per minute (total {})", failed.total)))
    };
    let here = urls::queue_sub(c, n, "metrics");
    let crumbs = queue_crumbs(c, n, Some(("metrics".to_owned(), here)));
    Ok(page(ctx, &view, "metrics", &crumbs, None, &body))
}
