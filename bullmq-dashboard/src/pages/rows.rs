//! A queue page's rows alone, rendered again for the live script to swap in when the
//! queue's event stream says jobs moved (the page itself reads without JavaScript).

use axum::extract::Query;
use axum::response::{Html, IntoResponse as _, Response};

use super::queue::{ListQuery, job_table, list};
use crate::error::DashboardError;
use crate::queue_route::{Page, QueueRoute};

/// `GET /c/{connection}/q/{queue}/rows?state=…&sort=…&page=…`: the job table of that page of
/// the state, as an HTML fragment (a search is not re-read: its page keeps its notice).
pub(crate) async fn rows_fragment(
    mut route: QueueRoute,
    Query(q): Query<ListQuery>,
) -> Result<Response, DashboardError> {
    let Page { view, opened, .. } = route.page().await?;
    if q.is_search() {
        return Err(DashboardError::bad(
            "q",
            "a search's rows are not re-read live",
            "load the queue page again to search again",
        ));
    }
    let (state, page_no, asc) = q.parse()?;
    let listed = list(&opened.queue, state, page_no, asc, &q).await?;
    let markup = job_table(&view, &opened, state, &listed.rows);
    Ok(Html(markup.into_string()).into_response())
}
