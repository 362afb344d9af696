//! A queue's page: its counts, its jobs in one state (paginated, sorted, searched by id or
//! name), and its actions.

use axum::extract::Query;
use axum::response::Response;
use bullmq::backend::{Queries as _, Range};
use bullmq::job::{JobState, JobType};
use bullmq::{AnyBackend, Error, Job, JobId, Queue};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{View, page, queue_crumbs};
use super::{Opened, STATES, time};
use crate::error::DashboardError;
use crate::fields::parse_state;
use crate::payload;
use crate::queue_route::{Page, QueueRoute};
use crate::search::{self, Found, Needle};
use crate::urls;

/// Jobs per page.
pub(crate) const PAGE_SIZE: i64 = 50;
/// How many of a state's jobs a search reads on Redis, at most (PostgreSQL queries them all).
pub(crate) const SEARCH_SCAN: u64 = 5000;
/// The most of a job's data a list row shows.
const PREVIEW: usize = 120;

/// The queue page's query.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ListQuery {
    pub(crate) state: Option<String>,
    pub(crate) page: Option<u64>,
    pub(crate) sort: Option<String>,
    pub(crate) id: Option<String>,
    /// The search: an id, a part of the name, or a part of a value in the data.
    pub(crate) q: Option<String>,
    /// The older name of `q`, still read from links made before it.
    pub(crate) name: Option<String>,
    pub(crate) done: Option<String>,
}

impl ListQuery {
    /// The state, page number and order (true: oldest first) asked for.
    pub(crate) fn parse(&self) -> Result<(JobState, i64, bool), DashboardError> {
        let state = parse_state("state", self.state.as_deref())?;
        let page_no = i64::try_from(self.page.unwrap_or(0).min(1_000_000)).unwrap_or(0);
        let asc = match self.sort.as_deref() {
            None | Some("" | "newest") => false,
            Some("oldest") => true,
            Some(other) => {
                return Err(DashboardError::bad(
                    "sort",
                    format!("{other:?} is not an order"),
                    "use newest or oldest",
                ));
            }
        };
        Ok((state, page_no, asc))
    }

    /// Whether the list is a search (by id or by name or data), which is not re-read live.
    pub(crate) fn is_search(&self) -> bool {
        self.id.as_deref().is_some_and(|s| !s.is_empty()) || self.needle().is_some()
    }

    /// What the search asks for, if anything.
    fn needle(&self) -> Option<Needle> {
        search::needle(self.q.as_deref()).or_else(|| search::needle(self.name.as_deref()))
    }
}

/// One line of a job list: the job, or why it could not be read.
pub(crate) enum Row {
    Job(Box<Job>),
    Broken { id: JobId, reason: String },
}

/// Reads each of `ids` on its own, so one job that cannot be decoded shows as such instead
/// of failing the list; ids whose job is gone are left out.
pub(crate) async fn rows(queue: &Queue<AnyBackend>, ids: &[JobId]) -> Vec<Row> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        match queue.get_job(id).await {
            Ok(Some(job)) => out.push(Row::Job(Box::new(job))),
            Ok(None) => {}
            Err(Error::JobDecode(e)) => out.push(Row::Broken {
                id: id.clone(),
                reason: format!("cannot be decoded: field {}: {}", e.field, e.reason),
            }),
            Err(e) => out.push(Row::Broken {
                id: id.clone(),
                reason: format!("cannot be read: {e}"),
            }),
        }
    }
    out
}

/// What the page lists: its rows, whether a next page may exist, and the search's result.
pub(crate) struct Listed {
    pub(crate) rows: Vec<Row>,
    more: bool,
    search: Option<Found>,
}

/// The page's rows: one job by id, the matches of a search, or a page of the state.
pub(crate) async fn list(
    queue: &Queue<AnyBackend>,
    state: JobState,
    page_no: i64,
    asc: bool,
    q: &ListQuery,
) -> Result<Listed, DashboardError> {
    if let Some(id) = q.id.as_deref().filter(|s| !s.is_empty()) {
        return Ok(Listed {
            rows: rows(queue, &[JobId::from(id)]).await,
            more: false,
            search: None,
        });
    }
    if let Some(needle) = q.needle() {
        let limit = usize::try_from(PAGE_SIZE).unwrap_or(50);
        let found = search::find(queue, state, &needle, asc, limit, SEARCH_SCAN).await?;
        return Ok(Listed {
            rows: rows(queue, &found.ids).await,
            more: false,
            search: Some(found),
        });
    }
    let start = page_no * PAGE_SIZE;
    let ids = queue
        .backend()
        .get_ranges(
            &[JobType::State(state)],
            Range {
                start,
                end: start + PAGE_SIZE - 1,
                asc,
            },
        )
        .await?;
    Ok(Listed {
        more: i64::try_from(ids.len()).unwrap_or(0) == PAGE_SIZE,
        rows: rows(queue, &ids).await,
        search: None,
    })
}

/// `GET /c/{connection}/q/{queue}`.
pub(crate) async fn queue_page(
    mut route: QueueRoute,
    Query(q): Query<ListQuery>,
) -> Result<Response, DashboardError> {
    let Page { view, opened, ctx } = route.page().await?;
    let (state, page_no, asc) = q.parse()?;
    let counts = super::overview::counts(&opened.queue).await?;
    let paused = opened.queue.is_paused().await?;
    let Listed { rows, more, search } = list(&opened.queue, state, page_no, asc, &q).await?;
    let needle = q.needle();
    let c = opened.conn.name.as_str();
    let n = opened.name.as_str();
    let here = urls::queue(c, n);
    let body = html! {
        h1 { (n) " " @if paused { span.badge.paused { "paused" } } }
        @if let Some(done) = &q.done { p.notice { "Done: " (done) } }
        nav.sub {
            a href=(view.href(&urls::queue_sub(c, n, "schedulers"))) { "schedulers" }
            a href=(view.href(&urls::queue_sub(c, n, "workers"))) { "workers" }
            a href=(view.href(&urls::queue_sub(c, n, "metrics"))) { "metrics" }
        }
        nav.tabs {
            @for (s, count) in STATES.iter().zip(&counts) {
                a class={ "tab" @if *s == state { " current" } }
                  href=(view.href(&format!("{here}?state={}", s.as_str()))) {
                    (s.as_str()) " " span.count data-state=(s.as_str()) { (count) }
                }
            }
        }
        form.search method="get" action=(view.href(&here)) {
            input type="hidden" name="state" value=(state.as_str());
            label { "id " input type="search" name="id" value=[q.id.as_deref()]; }
            label { "name or data " input type="search" name="q" value=[needle.as_ref().map(Needle::as_str)]; }
            select name="sort" {
                option value="newest" selected[!asc] { "newest first" }
                option value="oldest" selected[asc] { "oldest first" }
            }
            button type="submit" { "search" }
        }
        @if let (Some(found), Some(needle)) = (&search, &needle) {
            (search_note(&view, &opened, state, found, needle))
        }
        // Shown by the live script when the queue's event stream says a job moved and it
        // cannot re-read the rows (a search, or jobs ticked).
        p.notice.stale data-stale hidden { "Jobs have moved since this list was read: " a href="" { "read it again" } }
        // The live script swaps in the rows the server renders again at `data-rows`.
        @let rows_url = (!q.is_search()).then(|| view.href(&format!(
            "{}?state={}&sort={}&page={page_no}",
            urls::queue_sub(c, n, "rows"), state.as_str(), if asc { "oldest" } else { "newest" }
        )));
        div data-rows=[rows_url] { (job_table(&view, &opened, state, &rows)) }
        nav.pages {
            @if page_no > 0 {
                a href=(view.href(&format!("{here}?state={}&sort={}&page={}", state.as_str(), if asc {"oldest"} else {"newest"}, page_no - 1))) { "← previous" }
            }
            @if more {
                a href=(view.href(&format!("{here}?state={}&sort={}&page={}", state.as_str(), if asc {"oldest"} else {"newest"}, page_no + 1))) { "next →" }
            }
        }
        section.events {
            h2 { "Events" }
            p.muted { "As they happen, from the queue's event stream (needs JavaScript)." }
            ol.events data-events {}
        }
        @if opened.access.can_act() { (queue_actions(&view, c, n, state, paused)) }
    };
    let crumbs = queue_crumbs(c, n, None);
    Ok(page(
        ctx,
        &view,
        n,
        &crumbs,
        Some(urls::queue_sub(c, n, "live")),
        &body,
    ))
}

/// How far a search got, and the bulk actions on every job it matches.
fn search_note(
    view: &View,
    opened: &Opened<'_>,
    state: JobState,
    found: &Found,
    needle: &Needle,
) -> Markup {
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let bulk = |action: &str| {
        format!(
            "{}?state={}&action={action}&q={}",
            urls::queue_sub(c, n, "bulk"),
            state.as_str(),
            urls::enc(needle.as_str())
        )
    };
    html! {
        p.muted.search-note {
            @if found.complete && found.scanned == 0 {
                "Searched every " (state.as_str()) " job (a jsonb query)"
                @if found.more { "; the first " (found.ids.len()) " matches are shown" } "."
            } @else if found.complete {
                "Searched " (found.scanned) " " (state.as_str()) " job(s)"
                @if found.more { "; the first " (found.ids.len()) " matches are shown" } "."
            } @else {
                "Searched the first " (found.scanned) " " (state.as_str()) " job(s) (at most " (SEARCH_SCAN) " on Redis); later ones were not read."
            }
        }
        @if opened.access.can_act() && !found.ids.is_empty() {
            p.search-bulk {
                @if matches!(state, JobState::Failed | JobState::Completed) {
                    a href=(view.href(&bulk("retry"))) { "retry every matching job…" } " · "
                }
                @if !matches!(state, JobState::Active | JobState::WaitingChildren) {
                    a href=(view.href(&bulk("remove"))) { "remove every matching job…" }
                }
            }
        }
    }
}

pub(crate) fn job_table(view: &View, opened: &Opened<'_>, state: JobState, rows: &[Row]) -> Markup {
    let c = opened.conn.name.as_str();
    let n = opened.name.as_str();
    let pick = opened.access.can_act();
    html! {
        @if rows.is_empty() { p.muted { "No job." } }
        @else {
            div.scroll { table.jobs {
                thead { tr { @if pick { th { span.visually-hidden { "select" } } } th { "id" } th { "name" } th { "added" } th { "attempts" } th { "data" } th { "" } } }
                tbody {
                    @for row in rows {
                        @match row {
                            Row::Job(job) => tr {
                                @if pick { td { (pick_box(job.id.as_str())) } }
                                td { a href=(view.href(&urls::job(c, n, job.id.as_str()))) { (job.id.as_str()) } }
                                td { (job.name) }
                                td { (time(Some(job.timestamp))) }
                                td.num { (job.attempts_made) }
                                td.preview {
                                    (payload::cut(&job.data, PREVIEW, false).text)
                                    @if let Some(reason) = &job.failed_reason { br; span.error { (payload::cut(reason, PREVIEW, false).text) } }
                                }
                                td.row-actions { @if opened.access.can_act() { (job_actions(view, c, n, job.id.as_str(), state)) } }
                            },
                            Row::Broken { id, reason } => tr.broken {
                                @if pick { td { (pick_box(id.as_str())) } }
                                td { a href=(view.href(&urls::job(c, n, id.as_str()))) { (id.as_str()) } }
                                td colspan="4" .error { (reason) }
                                td.row-actions { @if opened.access.can_act() {
                                    (view.form(&urls::job_action(c, n, id.as_str(), "remove"), "remove", &html!{}, "danger"))
                                } }
                            },
                        }
                    }
                }
            } }
            @if pick { (selected_form(view, c, n, state)) }
        }
    }
}

/// A row's checkbox, part of the selected-jobs form (rows hold forms of their own, which
/// cannot nest).
fn pick_box(id: &str) -> Markup {
    html! { input type="checkbox" name="id" value=(id) form="selected" aria-label=(format!("select job {id}")); }
}

/// The form acting on the ticked rows.
fn selected_form(view: &View, c: &str, n: &str, state: JobState) -> Markup {
    html! {
        form #selected .action method="post" action=(view.href(&urls::queue_sub(c, n, "selected"))) {
            input type="hidden" name=(crate::csrf::FIELD) value=(view.token);
            input type="hidden" name="state" value=(state.as_str());
            label { "with the selected jobs: "
                select name="action" {
                    @if matches!(state, JobState::Failed | JobState::Completed) { option value="retry" { "retry" } }
                    @if state == JobState::Delayed { option value="promote" { "promote" } }
                    option value="remove" { "remove" }
                }
            }
            button type="submit" { "apply" }
        }
    }
}

/// The buttons a job in `state` has.
pub(crate) fn job_actions(view: &View, c: &str, n: &str, id: &str, state: JobState) -> Markup {
    html! {
        @if matches!(state, JobState::Failed | JobState::Completed) {
            (view.form(&urls::job_action(c, n, id, "retry"), "retry", &html!{}, ""))
        }
        @if state == JobState::Delayed {
            (view.form(&urls::job_action(c, n, id, "promote"), "promote", &html!{}, ""))
        }
        (view.form(&urls::job_action(c, n, id, "remove"), "remove", &html!{}, "danger"))
    }
}

fn queue_actions(view: &View, c: &str, n: &str, state: JobState, paused: bool) -> Markup {
    let state_select = |name: &str| {
        html! {
            select name=(name) {
                @for s in STATES { option value=(s.as_str()) selected[s == state] { (s.as_str()) } }
            }
        }
    };
    html! {
        section.actions {
            h2 { "Actions" }
            @if paused {
                (view.form(&urls::queue_sub(c, n, "resume"), "resume", &html!{}, ""))
            } @else {
                (view.form(&urls::queue_sub(c, n, "pause"), "pause", &html!{}, ""))
            }
            (view.form(&urls::queue_sub(c, n, "drain"), "drain",
                &html!{ label { input type="checkbox" name="delayed" value="1"; " delayed too" } }, "danger"))
            (view.form(&urls::queue_sub(c, n, "clean"), "clean", &html!{
                (state_select("state"))
                label { "older than (s) " input type="number" name="grace" value="0" min="0"; }
                label { "at most " input type="number" name="limit" value="1000" min="0"; }
            }, "danger"))
            p {
                a href=(view.href(&format!("{}?state={}&action=retry", urls::queue_sub(c, n, "bulk"), state.as_str()))) { "retry every " (state.as_str()) " job…" }
                " · "
                a href=(view.href(&format!("{}?state={}&action=remove", urls::queue_sub(c, n, "bulk"), state.as_str()))) { "remove every " (state.as_str()) " job…" }
            }
            details {
                summary { "Add a job" }
                (view.form(&urls::queue_sub(c, n, "add"), "add", &html!{
                    label { "name " input type="text" name="name" required; }
                    label { "data (JSON) " textarea name="data" rows="3" { "{}" } }
                    label { "delay (ms) " input type="number" name="delay" min="0"; }
                    label { "priority " input type="number" name="priority" min="0"; }
                }, ""))
            }
            details {
                summary { "Obliterate" }
                (view.form(&urls::queue_sub(c, n, "obliterate"), "obliterate", &html!{
                    label { "type the queue's name to confirm " input type="text" name="confirm" required autocomplete="off"; }
                    label { input type="checkbox" name="force" value="1"; " even with active jobs" }
                }, "danger"))
            }
        }
    }
}
