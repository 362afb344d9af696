//! A bulk run's page: what it does and how far it got; the script reloads it each second
//! until the run has finished.

use axum::extract::{Path, State};
use axum::response::Response;
use maud::html;

use super::layout::{View, page, queue_crumbs};
use super::open;
use crate::error::DashboardError;
use crate::request::Ctx;
use crate::state::Shared;
use crate::urls;

/// `GET /c/{connection}/q/{queue}/bulk/runs/{run}`.
pub(crate) async fn run_page(
    State(inner): State<Shared>,
    Path((connection, queue, run)): Path<(String, String, String)>,
    mut ctx: Ctx,
) -> Result<Response, DashboardError> {
    let opened = open(&inner, &ctx, &connection, &queue).await?;
    let view = View::new(&inner, &mut ctx)?;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let run = run
        .parse::<u64>()
        .ok()
        .and_then(|id| inner.runs.get(id))
        .filter(|r| r.what.connection == c && r.what.queue == n)
        .ok_or(DashboardError::NotFound)?;
    let (done, failed, finished) = (run.done(), run.failed(), run.finished());
    let what = &run.what;
    let back = format!("{}?state={}", urls::queue(c, n), what.state.as_str());
    let body = html! {
        h1 {
            (what.action.verb()) " " (what.state.as_str()) " jobs of " (n)
            @if let Some(needle) = &what.needle { " matching “" (needle) "”" }
        }
        div.run data-reload[!finished] {
            progress value=(done + failed) max=(what.total.max(1)) {}
            p.run-status {
                @if finished { "Finished: " } @else { "Running: " }
                span data-run-done { (done) } " of " (what.total) " job(s) "
                (what.action.past())
                @if failed > 0 { ", " (failed) " skipped (gone, moved or held by a worker meanwhile)" }
                "."
            }
            @if let Some(why) = run.stopped() { p.error { "Stopped early: " (why) } }
        }
        p { a href=(view.href(&back)) { "back to the queue" } }
    };
    let crumbs = queue_crumbs(c, n, None);
    Ok(page(&ctx, &view, "bulk run", &crumbs, None, &body))
}
