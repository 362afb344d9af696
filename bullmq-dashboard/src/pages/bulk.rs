//! The confirmation of a bulk action: how many jobs it will touch, before it runs.

use axum::extract::Query;
use axum::response::Response;
use bullmq::job::JobType;
use maud::html;
use serde::Deserialize;

use super::layout::{page, queue_crumbs};
use crate::bulk_action::{BulkAction, RUN_MAX, RUN_SCAN, check};
use crate::error::DashboardError;
use crate::fields::parse_state;
use crate::queue_route::{Page, QueueRoute};
use crate::search;
use crate::urls;

/// The page's query.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct BulkQuery {
    state: Option<String>,
    action: Option<String>,
    /// A search: the action then runs on its matches only.
    q: Option<String>,
}

/// `GET /c/{connection}/q/{queue}/bulk?state=…&action=…`.
pub(crate) async fn bulk_page(
    mut route: QueueRoute,
    Query(q): Query<BulkQuery>,
) -> Result<Response, DashboardError> {
    let Page { view, opened, ctx } = route.page().await?;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let state = parse_state("state", q.state.as_deref())?;
    let action = BulkAction::parse(q.action.as_deref())?;
    check(action, state)?;
    let needle = search::needle(q.q.as_deref());
    let (count, partial) = match &needle {
        Some(needle) => {
            let found = search::find(&opened.queue, state, needle, true, RUN_MAX, RUN_SCAN).await?;
            let partial = (!found.complete).then_some(found.scanned);
            (u64::try_from(found.ids.len()).unwrap_or(u64::MAX), partial)
        }
        None => (
            opened
                .queue
                .get_job_count_by_types(&[JobType::State(state)])
                .await?,
            None,
        ),
    };
    let body = html! {
        @if let Some(needle) = &needle {
            h1 { (action.verb()) " every " (state.as_str()) " job of " (n) " matching “" (needle.as_str()) "”" }
            p.count { "This will " (action.verb()) " " strong data-bulk-count { (count) } " matching job(s) now in state " (state.as_str()) ", one by one, showing its progress." }
            @if let Some(scanned) = partial { p.muted { "Only the first " (scanned) " jobs of the state were searched." } }
        } @else {
            h1 { (action.verb()) " every " (state.as_str()) " job of " (n) }
            p.count { "This will " (action.verb()) " " strong data-bulk-count { (count) } " job(s) now in state " (state.as_str()) ", in batches, showing its progress." }
        }
        @if opened.access.can_act() {
            (view.form(&urls::queue_sub(c, n, "bulk"), &format!("{} {count} job(s)", action.verb()), &html!{
                input type="hidden" name="state" value=(state.as_str());
                input type="hidden" name="action" value=(action.as_str());
                @if let Some(needle) = &needle { input type="hidden" name="q" value=(needle.as_str()); }
            }, "danger"))
        } @else { p.muted { "Read-only: you may not run it." } }
        p { a href=(view.href(&format!("{}?state={}", urls::queue(c, n), state.as_str()))) { "back" } }
    };
    let crumbs = queue_crumbs(c, n, None);
    Ok(page(ctx, &view, "bulk", &crumbs, None, &body))
}
