//! A queue's workers, as the store lists its clients.

use axum::response::Response;
use maud::html;

use super::layout::{page, queue_crumbs};
use crate::error::DashboardError;
use crate::queue_route::{Page, QueueRoute};
use crate::urls;

/// `GET /c/{connection}/q/{queue}/workers`.
pub(crate) async fn workers_page(mut route: QueueRoute) -> Result<Response, DashboardError> {
    let Page { view, opened, ctx } = route.page().await?;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let workers = opened.queue.get_workers().await;
    let body = html! {
        h1 { "Workers of " (n) }
        @match &workers {
            Err(e) => p.error { (e.to_string()) },
            Ok(list) if list.is_empty() => p.muted { "No worker connected." },
            Ok(list) => div.scroll { table {
                thead { tr { th { "name" } th { "address" } th { "age (s)" } th { "idle (s)" } } }
                tbody { @for w in list { tr {
                    td { (w.name) } td { (w.addr) }
                    td.num { @match w.age { Some(a) => (a), None => "-" } }
                    td.num { @match w.idle { Some(i) => (i), None => "-" } }
                } } }
            } },
        }
    };
    let here = urls::queue_sub(c, n, "workers");
    let crumbs = queue_crumbs(c, n, Some(("workers".to_owned(), here)));
    Ok(page(ctx, &view, "workers", &crumbs, None, &body))
}
