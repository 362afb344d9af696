//! The overview: every queue of every connection the request may see, with its counts.

use std::time::Duration;

use axum::extract::State;
use axum::response::Response;
use bullmq::job::JobType;
use bullmq::{AnyBackend, Queue, QueueName};
use futures_util::future::join_all;
use maud::{Markup, html};

use super::STATES;
use super::layout::{View, page};
use crate::error::DashboardError;
use crate::request::Ctx;
use crate::state::{ConnEntry, Inner, Shared};
use crate::urls;

/// One queue's line: counts in [`STATES`] order, and its settings.
pub(crate) struct Summary {
    pub(crate) name: QueueName,
    pub(crate) counts: Vec<u64>,
    pub(crate) paused: bool,
    pub(crate) concurrency: Option<u64>,
    pub(crate) rate: Option<(u64, u64)>,
    pub(crate) workers: Option<usize>,
    /// How long the oldest ready job has waited (`Queue::scaling_signals`); `None` when
    /// nothing waits.
    pub(crate) oldest: Option<Duration>,
}

/// The counts of `queue`, in [`STATES`] order: one store call.
pub(crate) async fn counts(queue: &Queue<AnyBackend>) -> Result<Vec<u64>, DashboardError> {
    let types: Vec<JobType> = STATES.iter().map(|s| JobType::State(*s)).collect();
    let counts = queue.get_job_counts(&types).await?;
    Ok(counts.into_iter().map(|(_, n)| n).collect())
}

/// The queues of `conn` the request may read (one call to list them).
pub(crate) async fn visible(
    inner: &Inner,
    ctx: &Ctx,
    conn: &ConnEntry,
) -> Result<Vec<QueueName>, DashboardError> {
    let names = conn.backend().await?.queue_names().await?;
    Ok(names
        .into_iter()
        .filter(|q| inner.access(&ctx.parts, &conn.name, q).can_read())
        .collect())
}

/// One queue's summary: four store calls.
async fn summary(conn: &ConnEntry, name: QueueName) -> Result<Summary, DashboardError> {
    let queue = conn.queue(&name).await?;
    let counts = counts(&queue).await?;
    let meta = queue.get_meta().await?;
    // Not every store lists its clients; the column then shows a dash.
    let workers = queue.get_workers_count().await.ok();
    let oldest = queue.scaling_signals().await?.oldest_waiting_age;
    Ok(Summary {
        name,
        counts,
        paused: meta.paused,
        concurrency: meta.concurrency,
        rate: meta.max.zip(meta.duration),
        workers,
        oldest,
    })
}

/// `GET /`.
pub(crate) async fn overview(
    State(inner): State<Shared>,
    mut ctx: Ctx,
) -> Result<Response, DashboardError> {
    let view = View::new(&inner, &mut ctx)?;
    let mut sections = Vec::new();
    for conn in &inner.connections {
        let section = match visible(&inner, &ctx, conn).await {
            Ok(names) => {
                let summaries = join_all(names.into_iter().map(|n| summary(conn, n))).await;
                connection_section(&view, conn, Ok(summaries))
            }
            Err(e) => connection_section(&view, conn, Err(e)),
        };
        sections.push(section);
    }
    let body = html! {
        h1 { "Queues" }
        @for s in &sections { (s) }
    };
    Ok(page(
        &ctx,
        &view,
        "Queues",
        &[],
        Some("/live".to_owned()),
        &body,
    ))
}

fn connection_section(
    view: &View,
    conn: &ConnEntry,
    summaries: Result<Vec<Result<Summary, DashboardError>>, DashboardError>,
) -> Markup {
    html! {
        section.connection {
            h2 {
                (conn.name)
                @if let Some(store) = conn.store() { " " span.badge { (store) } }
            }
            p.muted { code { (conn.shown()) } }
            @match summaries {
                Err(e) => p.error { (e.to_string()) },
                Ok(list) if list.is_empty() => p.muted { "No queue found." },
                Ok(list) => div.scroll {
                    table.counts {
                        thead { tr {
                            th { "queue" }
                            @for s in super::STATES { th { (s.as_str()) } }
                            th title="how long the oldest ready job has waited" { "oldest waiting" }
                            th { "workers" } th title="concurrency, and the rate limit (jobs per window)" { "limits" }
                            th title="jobs added over the last minute (live)" { "in/min" }
                            th title="jobs finished over the last minute (live)" { "out/min" }
                            th title="failed among those finished over the last minute (live)" { "failed" }
                        } }
                        tbody {
                            @for item in list {
                                @match item {
                                    Err(e) => tr { td colspan="14" .error { (e.to_string()) } },
                                    Ok(s) => tr data-conn=(conn.name) data-queue=(s.name.as_str()) {
                                        th {
                                            a href=(view.href(&urls::queue(&conn.name, s.name.as_str()))) { (s.name.as_str()) }
                                            @if s.paused { " " span.badge.paused { "paused" } }
                                        }
                                        @for (state, n) in super::STATES.iter().zip(&s.counts) {
                                            td.num data-state=(state.as_str()) data-label=(state.as_str()) { (n) }
                                        }
                                        td.num data-label="oldest waiting" { (age(s.oldest)) }
                                        td.num data-label="workers" { @match s.workers { Some(n) => (n), None => "-" } }
                                        td data-label="limits" {
                                            @if let Some(n) = s.concurrency { "concurrency " (n) }
                                            @if s.concurrency.is_some() && s.rate.is_some() { br; }
                                            @if let Some((max, ms)) = s.rate { (max) " / " (ms) " ms" }
                                            @if s.concurrency.is_none() && s.rate.is_none() { "-" }
                                        }
                                        // Filled by the live script from the event stream.
                                        td.num data-label="in/min" data-rate="in" { "-" }
                                        td.num data-label="out/min" data-rate="out" { "-" }
                                        td.num data-label="failed" data-rate="failurePct" { "-" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// An age in its largest whole unit (`-` for none): the overview's column is narrow.
pub(crate) fn age(age: Option<Duration>) -> String {
    let Some(age) = age else {
        return "-".to_owned();
    };
    let secs = age.as_secs();
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86_400 => format!("{} h", secs / 3600),
        _ => format!("{} d", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn ages_are_shown_in_their_largest_unit() {
        assert_eq!(super::age(None), "-");
        assert_eq!(super::age(Some(Duration::from_millis(1500))), "1 s");
        assert_eq!(super::age(Some(Duration::from_secs(125))), "2 min");
        assert_eq!(super::age(Some(Duration::from_secs(7200))), "2 h");
        assert_eq!(super::age(Some(Duration::from_secs(3 * 86_400))), "3 d");
    }
}
