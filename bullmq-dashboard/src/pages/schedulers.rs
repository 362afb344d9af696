//! A queue's job schedulers: pattern or interval, next run, iterations, template.

use axum::extract::Query;
use axum::response::Response;
use bullmq::backend::Schedulers as _;
use maud::html;
use serde::Deserialize;

use super::layout::{page, queue_crumbs};
use super::time;
use crate::error::DashboardError;
use crate::payload;
use crate::queue_route::{Page, QueueRoute};
use crate::urls;

/// Schedulers per page.
const PAGE: i64 = 50;

/// The page's query.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PageQuery {
    page: Option<u64>,
    /// What the action that led here did.
    done: Option<String>,
}

/// `GET /c/{connection}/q/{queue}/schedulers`.
pub(crate) async fn schedulers_page(
    mut route: QueueRoute,
    Query(q): Query<PageQuery>,
) -> Result<Response, DashboardError> {
    let Page { view, opened, ctx } = route.page().await?;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let backend = opened.queue.backend();
    let page_no = i64::try_from(q.page.unwrap_or(0).min(1_000_000)).unwrap_or(0);
    let total = backend.get_job_schedulers_count().await?;
    let start = page_no * PAGE;
    let ids = backend
        .get_job_schedulers_range(start, start + PAGE - 1, true)
        .await?;
    let mut records = Vec::with_capacity(ids.len());
    for (id, next) in &ids {
        records.push((id, *next, backend.get_job_scheduler(id).await?));
    }
    let here = urls::queue_sub(c, n, "schedulers");
    let can_act = opened.access.can_act();
    let body = html! {
        h1 { "Schedulers of " (n) " (" (total) ")" }
        @if let Some(done) = &q.done { p.notice { "Done: " (done) } }
        @if records.is_empty() { p.muted { "No scheduler." } }
        @else { div.scroll { table {
            thead { tr { th { "id" } th { "schedule" } th { "next run" } th { "iterations" } th { "template" } th { "" } } }
            tbody { @for (id, next, record) in &records { tr {
                td { (id) }
                @match record {
                    Some(r) => {
                        td {
                            @if let Some(p) = &r.schedule.pattern { "cron " code { (p) } }
                            @if let Some(every) = r.schedule.every { "every " (every.as_millis()) " ms" }
                            @if let Some(tz) = &r.schedule.tz { " (" (tz) ")" }
                        }
                        td { (time(r.next_millis.or(Some(*next)))) }
                        td.num { (r.iteration_count) }
                        td.preview { (r.name) " " (payload::cut(r.template_data.as_deref().unwrap_or("{}"), 200, false).text) }
                    }
                    None => { td colspan="4" .muted { "gone" } }
                }
                td.row-actions { @if can_act {
                    (view.form(&format!("{here}/{}/remove", urls::enc(id)), "remove", &html!{}, "danger"))
                } }
            } } }
        } } }
        nav.pages {
            @if page_no > 0 { a href=(view.href(&format!("{here}?page={}", page_no - 1))) { "← previous" } }
            @if i64::try_from(ids.len()).unwrap_or(0) == PAGE { a href=(view.href(&format!("{here}?page={}", page_no + 1))) { "next →" } }
        }
        @if can_act {
            section.actions {
                h2 { "Add or replace a scheduler" }
                (view.form(&here, "upsert", &html!{
                    label { "id " input type="text" name="id" required; }
                    label { "cron pattern " input type="text" name="pattern" placeholder="0 3 * * *"; }
                    label { "time zone " input type="text" name="tz" placeholder="Europe/London"; }
                    label { "or every (ms) " input type="number" name="every" min="1"; }
                    label { "job name " input type="text" name="name"; }
                    label { "data (JSON) " textarea name="data" rows="3" { "{}" } }
                }, ""))
            }
        }
    };
    let crumbs = queue_crumbs(c, n, Some(("schedulers".to_owned(), here.clone())));
    Ok(page(ctx, &view, "schedulers", &crumbs, None, &body))
}
