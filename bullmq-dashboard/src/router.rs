//! The routes, below the mount point.

use axum::Router;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::middleware::map_response;
use axum::routing::{MethodRouter, get, post};

use crate::state::Shared;
use crate::{actions, headers, live, pages};

const CSS: &str = include_str!("assets/dashboard.css");
const JS: &str = include_str!("assets/dashboard.js");

/// Where one queue's pages and actions live; each of [`queue_routes`] is below it.
const QUEUE: &str = "/c/{connection}/q/{queue}";

/// Every page, action and stream, with the security headers on each response.
pub(crate) fn router(state: Shared) -> Router {
    let mut router = Router::new()
        .route("/", get(pages::overview::overview))
        .route("/live", get(live::overview_live))
        .route(
            "/static/dashboard.css",
            asset("text/css; charset=utf-8", CSS),
        )
        .route(
            "/static/dashboard.js",
            asset("text/javascript; charset=utf-8", JS),
        );
    for (path, method) in queue_routes() {
        router = router.route(&format!("{QUEUE}{path}"), method);
    }
    router
        .layer(map_response(headers::secure))
        .with_state(state)
}

/// One queue's routes, by their path below [`QUEUE`].
fn queue_routes() -> [(&'static str, MethodRouter<Shared>); 13] {
    [
        ("", get(pages::queue::queue_page)),
        ("/live", get(live::queue_live)),
        ("/rows", get(pages::rows::rows_fragment)),
        (
            "/schedulers",
            get(pages::schedulers::schedulers_page).post(actions::scheduler::upsert_scheduler),
        ),
        (
            "/schedulers/{id}/remove",
            post(actions::scheduler::remove_scheduler),
        ),
        ("/selected", post(actions::selected::selected_action)),
        ("/workers", get(pages::workers::workers_page)),
        ("/metrics", get(pages::metrics::metrics_page)),
        (
            "/bulk",
            get(pages::bulk::bulk_page).post(actions::bulk::bulk_action),
        ),
        ("/bulk/runs/{run}", get(pages::run::run_page)),
        ("/jobs/{id}", get(pages::job::job_page)),
        ("/jobs/{id}/{action}", post(actions::job::job_action)),
        ("/{action}", post(actions::queue::queue_action)),
    ]
}

/// A bundled stylesheet or script, cached for five minutes.
fn asset(content_type: &'static str, body: &'static str) -> MethodRouter<Shared> {
    get(move || async move {
        (
            [(CONTENT_TYPE, content_type), (CACHE_CONTROL, "max-age=300")],
            body,
        )
    })
}
