//! Every page, on both stores.

use axum::http::StatusCode;
use axum::http::header;
use bullmq::job::JobState;
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

use crate::both_stores;
use crate::support::{BIG, CONN, Fixture, SECRET, Store, get};

async fn overview_lists_the_queue_with_its_counts(store: Store) {
    let fx = Fixture::new(store).await;
    let app = fx.app();
    let page = get(&app, "/admin").await;
    let body = page.ok();
    assert!(
        body.contains(&format!("href=\"/admin/c/{CONN}/q/{}\"", fx.name)),
        "{body}"
    );
    assert!(
        body.contains(&format!("data-conn=\"{CONN}\" data-queue=\"{}\"", fx.name)),
        "{body}"
    );
    assert!(
        body.contains("<td class=\"num\" data-state=\"failed\" data-label=\"failed\">1</td>"),
        "{body}"
    );
    assert!(
        body.contains("<td class=\"num\" data-state=\"completed\" data-label=\"completed\">2</td>"),
        "{body}"
    );
    assert!(body.contains("/admin/static/dashboard.js"), "{body}");
    assert!(!body.contains(SECRET));
    // The fixture's waiting job has waited some seconds; once it is gone, nothing has.
    assert!(
        oldest_waiting(body).ends_with(" s") || oldest_waiting(body).ends_with(" min"),
        "{body}"
    );
    assert!(fx.queue.remove(&fx.waiting, false).await.unwrap());
    let empty = get(&app, "/admin").await;
    assert_eq!(oldest_waiting(empty.ok()), "-", "{}", empty.body);
    let css = get(&app, "/admin/static/dashboard.css").await;
    assert!(css.ok().contains("prefers-color-scheme: dark"));
}
both_stores!(overview_lists_the_queue_with_its_counts);

/// The overview's "oldest waiting" cell (the page has one queue).
fn oldest_waiting(body: &str) -> &str {
    let marker = "data-label=\"oldest waiting\">";
    let at = body.find(marker).expect("an oldest-waiting cell") + marker.len();
    body[at..].split("</td>").next().unwrap()
}

async fn queue_page_lists_sorts_and_searches(store: Store) {
    let fx = Fixture::new(store).await;
    let app = fx.app();
    let failed = get(&app, &fx.path("?state=failed")).await;
    let body = failed.ok();
    assert!(
        body.contains(&format!("/jobs/{}\"", fx.failed.as_str())),
        "{body}"
    );
    assert!(body.contains("boom"), "{body}");
    assert!(
        body.contains(&format!("/jobs/{}/retry", fx.failed.as_str())),
        "a retry button"
    );
    let completed = get(&app, &fx.path("?state=completed&sort=oldest")).await;
    let body = completed.ok();
    let (a, b) = (
        body.find(&format!("/jobs/{}\"", fx.completed.as_str())),
        body.find(&format!("/jobs/{}\"", fx.big.as_str())),
    );
    assert!(a.is_some() && b.is_some(), "{body}");
    let by_id = get(
        &app,
        &fx.path(&format!("?state=waiting&id={}", fx.waiting.as_str())),
    )
    .await;
    assert!(by_id.ok().contains("needle-job"));
    let by_name = get(&app, &fx.path("?state=waiting&name=NEEDLE")).await;
    let body = by_name.ok();
    assert!(
        body.contains("needle-job") && !body.contains(">later<"),
        "{body}"
    );
    // A value in the data, in any case, at any depth; and nothing for a value no job has.
    let by_data = get(&app, &fx.path("?state=waiting&q=ME")).await;
    let body = by_data.ok();
    assert!(
        body.contains("needle-job") && body.contains("Searched"),
        "{body}"
    );
    let by_number = get(&app, &fx.path("?state=failed&q=2")).await;
    assert!(by_number.ok().contains("fail-one"), "{}", by_number.body);
    let nothing = get(&app, &fx.path("?state=waiting&q=no-such-value")).await;
    let body = nothing.ok();
    assert!(
        body.contains("No job.") && !body.contains("needle-job"),
        "{body}"
    );
    let bad = get(&app, &fx.path("?state=sleeping")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.body.contains("`state`") && bad.body.contains("sleeping"),
        "{}",
        bad.body
    );
}
both_stores!(queue_page_lists_sorts_and_searches);

async fn job_page_shows_its_fields_and_cuts_a_huge_return_value(store: Store) {
    let fx = Fixture::new(store).await;
    let app = fx.app();
    let failed = get(&app, &fx.path(&format!("/jobs/{}", fx.failed.as_str()))).await;
    let body = failed.ok();
    // One attempt, failed, with its worker and the first line of its error.
    let attempts = &body[body.find("table class=\"attempts\"").expect("the attempts")..];
    assert!(
        attempts.contains("<td class=\"num\">1</td><td>failed</td>") && attempts.contains("boom"),
        "{attempts}"
    );
    assert!(
        body.contains("fail-one") && body.contains("boom") && body.contains("failed"),
        "{body}"
    );
    assert!(
        body.contains("&quot;n&quot;:2") || body.contains("\"n\":2"),
        "{body}"
    );
    let big = get(&app, &fx.path(&format!("/jobs/{}", fx.big.as_str()))).await;
    let body = big.ok();
    assert!(
        body.len() < 200 * 1024,
        "a cut page, not {} bytes",
        body.len()
    );
    assert!(body.contains("Cut: showing 16.0 KiB of 10.0 MiB"), "{body}");
    assert!(body.contains("?full=1"), "{body}");
    let whole = get(&app, &fx.path(&format!("/jobs/{}?full=1", fx.big.as_str()))).await;
    assert!(whole.ok().len() > BIG, "the whole value on request");
    assert_eq!(
        get(&app, &fx.path("/jobs/no-such-job")).await.status,
        StatusCode::NOT_FOUND
    );
}
both_stores!(job_page_shows_its_fields_and_cuts_a_huge_return_value);

async fn schedulers_workers_metrics_and_bulk_pages_answer(store: Store) {
    let fx = Fixture::new(store).await;
    let scheduler = bullmq::JobScheduler::new(fx.queue.backend().clone());
    scheduler
        .upsert(
            "every-hour",
            &bullmq::RepeatOptions {
                every: Some(std::time::Duration::from_secs(3600)),
                ..Default::default()
            },
            bullmq::JobTemplate::named("tick"),
        )
        .await
        .unwrap();
    let app = fx.app();
    let schedulers = get(&app, &fx.path("/schedulers")).await;
    let body = schedulers.ok();
    assert!(
        body.contains("every-hour") && body.contains("every 3600000 ms"),
        "{body}"
    );
    get(&app, &fx.path("/workers")).await.ok();
    let metrics = get(&app, &fx.path("/metrics")).await;
    assert!(metrics.ok().contains("<svg"), "{}", metrics.body);
    let bulk = get(&app, &fx.path("/bulk?state=failed&action=retry")).await;
    assert!(
        bulk.ok().contains("<strong data-bulk-count>1</strong>"),
        "{}",
        bulk.body
    );
    let wrong = get(&app, &fx.path("/bulk?state=waiting&action=retry")).await;
    assert_eq!(wrong.status, StatusCode::BAD_REQUEST);
}
both_stores!(schedulers_workers_metrics_and_bulk_pages_answer);

async fn a_corrupt_job_shows_as_such_in_its_list(store: Store) {
    let fx = Fixture::new(store).await;
    let corrupt = fx.corrupt_job().await;
    let app = fx.app();
    let list = get(&app, &fx.path("?state=waiting")).await;
    let body = list.ok();
    assert!(body.contains("cannot be decoded: field opts"), "{body}");
    assert!(
        body.contains("needle-job"),
        "the other jobs are still listed: {body}"
    );
    assert!(
        body.contains(&format!("/jobs/{}/remove", corrupt.as_str())),
        "a remove button"
    );
    let page = get(&app, &fx.path(&format!("/jobs/{}", corrupt.as_str()))).await;
    assert!(page.ok().contains("cannot be decoded"), "{}", page.body);
    // The overview still counts it.
    get(&app, "/admin").await.ok();
}
both_stores!(a_corrupt_job_shows_as_such_in_its_list);

/// The first event of an SSE response.
async fn first_event(app: &axum::Router, path: &str) -> String {
    let mut body = event_stream(app, path).await;
    read_until(&mut body, "\n\n").await
}

/// The text of an SSE response read until it holds `needle` (a bound on the wait so that a
/// missing event fails the test instead of hanging it).
async fn read_until(body: &mut axum::body::Body, needle: &str) -> String {
    let mut text = String::new();
    let read = async {
        while !text.contains(needle) {
            let frame = body.frame().await.expect("an event").unwrap();
            if let Ok(data) = frame.into_data() {
                text.push_str(&String::from_utf8_lossy(&data));
            }
        }
    };
    let done = tokio::time::timeout(std::time::Duration::from_secs(120), read).await;
    assert!(done.is_ok(), "no {needle:?} in the stream: {text}");
    text
}

/// An SSE response's body.
async fn event_stream(app: &axum::Router, path: &str) -> axum::body::Body {
    let request = axum::http::Request::get(path)
        .body(axum::body::Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let kind = response
        .headers()
        .get(header::CONTENT_TYPE)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    response.into_body()
}

async fn live_counts_stream(store: Store) {
    let fx = Fixture::new(store).await;
    let app = fx.app();
    let event = first_event(&app, &fx.path("/live")).await;
    assert!(event.starts_with("event: counts"), "{event}");
    assert!(
        event.contains("\"failed\":1") && event.contains(&fx.name),
        "{event}"
    );
    let overview = first_event(&app, "/admin/live").await;
    assert!(
        overview.contains(&fx.name) && overview.contains("\"completed\":2"),
        "{overview}"
    );
    let state = fx.queue.get_job_state(&fx.waiting).await.unwrap();
    assert_eq!(state, Some(JobState::Waiting));
}
both_stores!(live_counts_stream);

async fn live_events_come_from_the_event_stream(store: Store) {
    let fx = Fixture::new(store).await;
    let app = fx.app();
    let mut queue_body = event_stream(&app, &fx.path("/live")).await;
    let first = read_until(&mut queue_body, "\n\n").await;
    assert!(first.starts_with("event: counts"), "{first}");
    let mut overview_body = event_stream(&app, "/admin/live").await;
    read_until(&mut overview_body, &fx.name).await;
    let added = fx
        .queue
        .add(
            "announced",
            &serde_json::json!({}),
            bullmq::JobOptions::default(),
        )
        .await
        .unwrap();
    // The queue's stream passes the event on, then the counts it changed.
    let text = read_until(&mut queue_body, "\"waiting\":2").await;
    assert!(
        text.contains("event: job")
            && text.contains(&format!("\"jobId\":\"{}\"", added.id.as_str()))
            && text.contains("\"event\":\"added\""),
        "{text}"
    );
    // The overview counts the job in its last minute's rates.
    let text = read_until(&mut overview_body, "\"in\":1").await;
    assert!(text.contains("\"rates\""), "{text}");
}
both_stores!(live_events_come_from_the_event_stream);

async fn a_job_page_links_its_parent_and_children(store: Store) {
    let fx = Fixture::new(store).await;
    let queue = fx.queue.name().clone();
    let flow = bullmq::FlowProducer::new(fx.queue.backend().clone());
    let node = flow
        .add(
            bullmq::FlowJob::new(queue.clone(), "parent", serde_json::json!({})).child(
                bullmq::FlowJob::new(queue.clone(), "child", serde_json::json!({})),
            ),
        )
        .await
        .unwrap();
    let (parent, child) = (
        node.job.id.as_str().to_owned(),
        node.children[0].job.id.as_str().to_owned(),
    );
    let app = fx.app();
    let page = get(&app, &fx.path(&format!("/jobs/{parent}"))).await;
    let body = page.ok();
    assert!(
        body.contains("Flow")
            && body.contains(&format!("href=\"{}\"", fx.path(&format!("/jobs/{child}")))),
        "{body}"
    );
    let page = get(&app, &fx.path(&format!("/jobs/{child}"))).await;
    let body = page.ok();
    assert!(
        body.contains(&format!("href=\"{}\"", fx.path(&format!("/jobs/{parent}")))),
        "{body}"
    );
    // The tree: the parent, and the child highlighted below it.
    let tree = &body[body.find("ul class=\"tree\"").expect("a flow tree")..];
    let (at_parent, at_child) = (
        tree.find(&format!("/jobs/{parent}\"")).unwrap(),
        tree.find(&format!(
            "<strong class=\"current\">{queue} / {child}</strong>"
        ))
        .unwrap(),
    );
    assert!(at_parent < at_child, "{tree}");
    let waiting_children = get(&app, &fx.path("?state=waiting-children")).await;
    assert!(
        waiting_children.ok().contains(">parent<"),
        "{}",
        waiting_children.body
    );
}
both_stores!(a_job_page_links_its_parent_and_children);

async fn a_queue_pages_rows_are_rendered_alone_for_the_live_swap(store: Store) {
    let fx = Fixture::new(store).await;
    let app = fx.app();
    let page = get(&app, &fx.path("?state=waiting")).await;
    let rows_url = format!(
        "{}?state=waiting&amp;sort=newest&amp;page=0",
        fx.path("/rows")
    );
    assert!(
        page.ok().contains(&format!("data-rows=\"{rows_url}\"")),
        "{}",
        page.body
    );
    let rows = get(&app, &rows_url.replace("&amp;", "&")).await;
    let fragment = rows.ok();
    assert!(
        fragment.starts_with("<table") || fragment.starts_with("<div"),
        "{fragment}"
    );
    assert!(!fragment.contains("<html"), "{fragment}");
    assert!(
        fragment.contains(&format!(">{}</a>", fx.waiting.as_str())),
        "{fragment}"
    );
    // A job added since the page was read is in the rows read again.
    let added = fx
        .queue
        .add(
            "later-one",
            &serde_json::json!({}),
            bullmq::JobOptions::default(),
        )
        .await
        .unwrap()
        .id;
    let again = get(&app, &rows_url.replace("&amp;", "&")).await;
    assert!(
        again.ok().contains(&format!(">{}</a>", added.as_str())),
        "{}",
        again.body
    );
    // A search is not re-read live: its page has no rows URL, and the endpoint refuses it.
    let searched = get(&app, &fx.path("?state=waiting&q=needle")).await;
    assert!(!searched.ok().contains("data-rows=\""), "{}", searched.body);
    let refused = get(
        &app,
        &format!("{}?state=waiting&q=needle", fx.path("/rows")),
    )
    .await;
    assert_eq!(refused.status, axum::http::StatusCode::BAD_REQUEST);
}
both_stores!(a_queue_pages_rows_are_rendered_alone_for_the_live_swap);
