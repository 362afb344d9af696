//! A job's page: data, options, progress, logs, stack traces, return value, parent and
//! children, each value cut past 16 KiB unless `?full=1`.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use bullmq::backend::{Lifecycle as _, Range};
use bullmq::job::JobState;
use bullmq::{Error, Job, JobId};
use maud::{Markup, html};
use serde::Deserialize;

use super::layout::{View, page, queue_crumbs};
use super::{open, time};
use crate::error::DashboardError;
use crate::payload;
use crate::request::Ctx;
use crate::state::Shared;
use crate::urls;

/// Log lines and children shown per list.
const LIST: u64 = 50;
/// The largest data (bytes) the page offers to edit in a form; larger is edited by code.
const EDIT_MAX: usize = 256 * 1024;

/// The job page's query.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct JobQuery {
    full: Option<String>,
    done: Option<String>,
}

/// A value, cut unless `full`, with its size and a link to the whole of it.
fn value(text: &str, full: bool, whole: &str) -> Markup {
    let shown = payload::cut(text, payload::LIMIT, full);
    html! {
        pre.value { (shown.text) }
        @if let Some(size) = shown.cut_from {
            p.cut { "Cut: showing " (payload::size(payload::LIMIT)) " of " (payload::size(size)) ". "
                a href=(whole) { "show the whole value" } }
        }
    }
}

/// The options that are set, as Rust reads them: unset ones and the stored key order (an
/// encoding detail) left out.
fn set_options(opts: &bullmq::JobOptions) -> String {
    let full = format!("{opts:#?}");
    let mut out = Vec::new();
    let mut skipping: Option<usize> = None;
    for line in full.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(at) = skipping {
            if indent == at && trimmed.starts_with([')', ']', '}']) {
                skipping = None;
            }
            continue;
        }
        if trimmed.starts_with("key_order:") {
            if !trimmed.ends_with(',') {
                skipping = Some(indent);
            }
            continue;
        }
        if trimmed.ends_with(": None,") || trimmed.ends_with(": {},") || trimmed.ends_with(": [],")
        {
            continue;
        }
        out.push(line);
    }
    out.join("\n")
}

/// Each attempt: its outcome and the first line of its error where stored, and the worker
/// where known. BullMQ keeps one stack trace per failed attempt (up to the job's
/// `stackTraceLimit`, the newest last) and only the latest attempt's worker (`processedBy`).
fn attempts(job: &Job, state: Option<JobState>) -> Markup {
    let started = job.attempts_started.max(job.attempts_made);
    let traces = &job.stacktrace;
    // Whether the latest attempt failed: the job failed, or waits to be tried again.
    let last_failed = matches!(
        state,
        Some(JobState::Failed | JobState::Delayed | JobState::Waiting | JobState::Prioritized)
    );
    let failed_attempts = if last_failed {
        started
    } else {
        started.saturating_sub(1)
    };
    html! {
        @if started == 0 { p.muted { "Not started yet." } }
        @else {
            div.scroll { table.attempts {
                thead { tr { th { "#" } th { "outcome" } th { "worker" } th { "error" } } }
                tbody {
                    @for n in 1..=started {
                        @let last = n == started;
                        // The traces are the latest failed attempts', oldest first.
                        @let back = failed_attempts.checked_sub(n).and_then(|k| usize::try_from(k).ok());
                        @let trace = back.and_then(|k| traces.len().checked_sub(k + 1)).and_then(|i| traces.get(i));
                        tr {
                            td.num { (n) }
                            td { @if last { (outcome(state)) } @else { "failed" } }
                            td { @if last { (job.processed_by.as_deref().unwrap_or("unknown")) } @else { span.muted { "not kept" } } }
                            td.preview { @if let Some(t) = trace { span.error { (t.lines().next().unwrap_or("")) } } }
                        }
                    }
                }
            } }
        }
    }
}

/// What the latest attempt came to, by the job's state.
fn outcome(state: Option<JobState>) -> &'static str {
    match state {
        Some(JobState::Completed) => "completed",
        Some(JobState::Failed) => "failed",
        Some(JobState::Active) => "running",
        Some(JobState::Delayed | JobState::Waiting | JobState::Prioritized) => {
            "failed, to be retried"
        }
        Some(JobState::WaitingChildren) => "waiting for its children",
        None => "unknown",
    }
}

/// `GET /c/{connection}/q/{queue}/jobs/{id}`.
pub(crate) async fn job_page(
    State(inner): State<Shared>,
    Path((connection, queue, id)): Path<(String, String, String)>,
    Query(q): Query<JobQuery>,
    mut ctx: Ctx,
) -> Result<Response, DashboardError> {
    let opened = open(&inner, &ctx, &connection, &queue).await?;
    let view = View::new(&inner, &mut ctx)?;
    let c = opened.conn.name.as_str();
    let n = opened.name.as_str();
    let full = q.full.as_deref() == Some("1");
    let job_id = JobId::from(id.as_str());
    let here = urls::job(c, n, &id);
    let whole = view.href(&format!("{here}?full=1"));
    let crumbs = queue_crumbs(c, n, Some((id.clone(), here.clone())));
    let job = match opened.queue.get_job(&job_id).await {
        Ok(Some(job)) => job,
        Ok(None) => return Err(DashboardError::NotFound),
        Err(Error::JobDecode(e)) => {
            let body = html! {
                h1 { "Job " (id) }
                p.error { "This job cannot be decoded: field " code { (e.field) } ": " (e.reason) }
                @if opened.access.can_act() {
                    (view.form(&urls::job_action(c, n, &id, "remove"), "remove", &html!{}, "danger"))
                }
            };
            return Ok(page(&ctx, &view, &id, &crumbs, None, &body));
        }
        Err(e) => return Err(e.into()),
    };
    let state = opened.queue.get_job_state(&job_id).await?;
    let logs = opened
        .queue
        .get_job_logs(
            &job_id,
            Range {
                start: 0,
                end: i64::try_from(LIST).unwrap_or(50) - 1,
                asc: true,
            },
        )
        .await?;
    let backend = opened.queue.backend();
    let parent_link = |key: &str| -> Markup {
        match backend.parse_node_key(key) {
            Some(node) => {
                html! { a href=(view.href(&urls::job(c, &node.queue, &node.id))) { (node.queue) " / " (node.id) } }
            }
            None => html! { code { (key) } },
        }
    };
    let flow = super::flow::tree(&view, opened.conn, &opened.queue, &job).await;
    let state_text = state.map_or("unknown", |s| s.as_str());
    let options = set_options(&job.opts);
    let progress = job.progress.to_string();
    let body = html! {
        h1 { "Job " (id) " " span.badge { (state_text) } }
        @if let Some(done) = &q.done { p.notice { "Done: " (done) } }
        @if opened.access.can_act() {
            @if let Some(s) = state { div.row-actions { (super::queue::job_actions(&view, c, n, &id, s)) } }
        }
        dl.fields {
            dt { "name" } dd { (job.name) }
            dt { "added" } dd { (time(Some(job.timestamp))) }
            dt { "processed" } dd { (time(job.processed_on)) }
            dt { "finished" } dd { (time(job.finished_on)) }
            dt { "attempts" } dd { (job.attempts_made) " made, " (job.attempts_started) " started" }
            dt { "delay" } dd { (job.delay.as_millis()) " ms" }
            dt { "priority" } dd { (job.priority) }
            dt { "worker" } dd { (job.processed_by.as_deref().unwrap_or("-")) }
            @if let Some(parent) = &job.parent {
                dt { "parent" }
                dd {
                    @let parent_key = format!("{}:{}", parent.queue_key, parent.id.as_deref().unwrap_or(""));
                    (parent_link(job.parent_key.as_deref().unwrap_or(&parent_key)))
                }
            }
        }
        h2 { "Attempts" } (attempts(&job, state))
        h2 { "Data" } (value(&job.data, full, &whole))
        @if opened.access.can_act() && job.data.len() <= EDIT_MAX {
            details.edit {
                summary { "Edit the data" }
                (view.form(&urls::job_action(c, n, &id, "update"), "update data", &html!{
                    label { "data (JSON) " textarea name="data" rows="8" { (job.data) } }
                }, ""))
            }
        }
        h2 { "Progress" } (value(&progress, full, &whole))
        @if let Some(rv) = &job.return_value { h2 { "Return value" } (value(rv, full, &whole)) }
        @if let Some(reason) = &job.failed_reason { h2 { "Failed reason" } (value(reason, full, &whole)) }
        @if !job.stacktrace.is_empty() {
            h2 { "Stack traces" }
            @for trace in &job.stacktrace { (value(trace, full, &whole)) }
        }
        h2 { "Options" } (value(&options, full, &whole))
        h2 { "Logs (" (logs.count) ")" }
        @if logs.logs.is_empty() { p.muted { "No log." } }
        @else { ol.logs { @for line in &logs.logs { li { (payload::cut(line, payload::LIMIT, full).text) } } } }
        @if let Some(flow) = flow {
            h2 { "Flow" }
            p.muted { "Its place in the flow, across queues (up to 100 jobs, 20 children of each kind per job)." }
            (flow)
        }
    };
    Ok(page(&ctx, &view, &id, &crumbs, None, &body))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_set_options_are_shown() {
        let opts = bullmq::JobOptions {
            attempts: Some(3),
            ..bullmq::JobOptions::default()
        };
        let shown = super::set_options(&opts);
        assert!(
            shown.contains("attempts") && !shown.contains("None"),
            "{shown}"
        );
        assert!(
            shown.starts_with("JobOptions {") && shown.ends_with('}'),
            "{shown}"
        );
    }
}
