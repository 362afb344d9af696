//! The routes, below the mount point.

use axum::Router;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::middleware::map_response;
use axum::routing::{get, post};

use crate::state::Shared;
use crate::{actions, headers, live, pages};

const CSS: &str = include_str!("assets/dashboard.css");
const JS: &str = include_str!("assets/dashboard.js");

/// Every page, action and stream, with the security headers on each response.
pub(crate) fn router(state: Shared) -> Router {
    let q = "/c/{connection}/q/{queue}";
    Router::new()
        .route("/", get(pages::overview::overview))
        .route("/live", get(live::overview_live))
        .route(
            "/static/dashboard.css",
            get(|| async {
                (
                    [
                        (CONTENT_TYPE, "text/css; charset=utf-8"),
                        (CACHE_CONTROL, "max-age=300"),
                    ],
                    CSS,
                )
            }),
        )
        .route(
            "/static/dashboard.js",
            get(|| async {
                (
                    [
                        (CONTENT_TYPE, "text/javascript; charset=utf-8"),
                        (CACHE_CONTROL, "max-age=300"),
                    ],
                    JS,
                )
            }),
        )
        .route(q, get(pages::queue::queue_page))
        .route(&format!("{q}/live"), get(live::queue_live))
        .route(&format!("{q}/rows"), get(pages::rows::rows_fragment))
        .route(
            &format!("{q}/schedulers"),
            get(pages::schedulers::schedulers_page).post(actions::scheduler::upsert_scheduler),
        )
        .route(
            &format!("{q}/schedulers/{{id}}/remove"),
            post(actions::scheduler::remove_scheduler),
        )
        .route(
            &format!("{q}/selected"),
            post(actions::selected::selected_action),
        )
        .route(&format!("{q}/workers"), get(pages::workers::workers_page))
        .route(&format!("{q}/metrics"), get(pages::metrics::metrics_page))
        .route(
            &format!("{q}/bulk"),
            get(pages::bulk::bulk_page).post(actions::bulk::bulk_action),
        )
        .route(&format!("{q}/bulk/runs/{{run}}"), get(pages::run::run_page))
        .route(&format!("{q}/jobs/{{id}}"), get(pages::job::job_page))
        .route(
            &format!("{q}/jobs/{{id}}/{{action}}"),
            post(actions::job::job_action),
        )
        .route(
            &format!("{q}/{{action}}"),
            post(actions::queue::queue_action),
        )
        .layer(map_response(headers::secure))
        .with_state(state)
}
