//! Bulk actions on every job of a state, or on a search's matches: the count is shown first
//! (the bulk page), then a task works through them (a state in bounded batches, matches one
//! by one) while the run's page shows how far it got.

use std::time::Duration;

use axum::extract::Form;
use axum::response::Response;
use bullmq::backend::{Admin as _, Batch, ReprocessOptions};
use bullmq::job::{FinishedState, JobState, JobType};
use bullmq::{AnyBackend, JobId, Queue};

use super::Fields;
use crate::bulk_action::{BulkAction, RUN_MAX, RUN_SCAN, check};
use crate::error::DashboardError;
use crate::fields::parse_state;
use crate::queue_route::QueueRoute;
use crate::runs::{NewRun, Run};
use crate::search::{self, Needle};
use crate::urls;

/// Jobs one store call retries or removes.
const RETRY_BATCH: u32 = 1000;

/// The finished state a retry of `state`'s jobs names (`check` has let only these through).
fn finished(state: JobState) -> FinishedState {
    if state == JobState::Failed {
        FinishedState::Failed
    } else {
        FinishedState::Completed
    }
}

/// `POST /c/{connection}/q/{queue}/bulk`.
pub(crate) async fn bulk_action(
    route: QueueRoute,
    Form(fields): Form<Fields>,
) -> Result<Response, DashboardError> {
    let opened = route.guard(&fields).await?;
    let (c, n) = (opened.conn.name.as_str(), opened.name.as_str());
    let state = parse_state("state", fields.get("state").map(String::as_str))?;
    let action = BulkAction::parse(fields.get("action").map(String::as_str))?;
    check(action, state)?;
    let needle = search::needle(fields.get("q").map(String::as_str));
    let (c, n) = (c.to_owned(), n.to_owned());
    let targets = match &needle {
        Some(needle) => Targets::Matches(
            search::find(&opened.queue, state, needle, true, RUN_MAX, RUN_SCAN)
                .await?
                .ids,
        ),
        None => Targets::State(
            opened
                .queue
                .get_job_count_by_types(&[JobType::State(state)])
                .await?,
        ),
    };
    let total = match &targets {
        Targets::Matches(ids) => u64::try_from(ids.len()).unwrap_or(u64::MAX),
        Targets::State(count) => *count,
    };
    let (id, run) = route.inner.runs.start(NewRun {
        connection: c.clone(),
        queue: n.clone(),
        action,
        state,
        needle: needle.as_ref().map(|s| s.as_str().to_owned()),
        total,
    });
    tracing::info!(target: "bullmq_dashboard", connection = %c, queue = %n, action = action.as_str(), state = state.as_str(), search = needle.as_ref().map(Needle::as_str), jobs = total, run = id, "bulk run started");
    let queue = opened.queue;
    tokio::spawn(async move {
        let outcome = match targets {
            Targets::Matches(ids) => one_by_one(&queue, &run, ids).await,
            Targets::State(_) => in_batches(&queue, &run).await,
        };
        if let Err(e) = &outcome {
            run.stop(e.to_string());
        }
        run.finish();
        tracing::info!(target: "bullmq_dashboard", connection = %run.what.connection, queue = %run.what.queue, action = run.what.action.as_str(), done = run.done(), failed = run.failed(), error = outcome.err().map(|e| e.to_string()), run = id, "bulk run finished");
    });
    Ok(route
        .ctx
        .redirect(&format!("{}/{id}", urls::queue_sub(&c, &n, "bulk/runs"))))
}

/// The jobs a bulk run acts on.
enum Targets {
    /// These, one by one (a search's matches).
    Matches(Vec<JobId>),
    /// Every job of the state (this many when it started), in batches.
    State(u64),
}

/// Acts on each of `ids`; a job gone, moved or locked meanwhile is counted as skipped.
async fn one_by_one(
    queue: &Queue<AnyBackend>,
    run: &Run,
    ids: Vec<JobId>,
) -> Result<(), bullmq::Error> {
    let state = run.what.state;
    for job_id in ids {
        let ok = match run.what.action {
            BulkAction::Retry => queue
                .job(job_id)
                .retry(
                    finished(state),
                    ReprocessOptions {
                        reset_attempts_made: true,
                        reset_attempts_started: true,
                    },
                )
                .await
                .is_ok(),
            BulkAction::Remove => queue.remove(&job_id, false).await.unwrap_or(false),
        };
        run.step(ok);
    }
    Ok(())
}

/// Every job of the state, a bounded batch per store call, the progress counted after each.
async fn in_batches(queue: &Queue<AnyBackend>, run: &Run) -> Result<(), bullmq::Error> {
    let state = run.what.state;
    match run.what.action {
        BulkAction::Retry => {
            let before = u64::try_from(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_millis(),
            )
            .unwrap_or(u64::MAX);
            let types = [JobType::State(state)];
            let start = queue.get_job_count_by_types(&types).await?;
            loop {
                let batch = queue
                    .backend()
                    .retry_finished_jobs(finished(state), RETRY_BATCH, before)
                    .await?;
                let left = queue.get_job_count_by_types(&types).await?;
                run.set_done(start.saturating_sub(left));
                if batch == Batch::Done {
                    return Ok(());
                }
            }
        }
        BulkAction::Remove => loop {
            let removed = queue
                .clean(Duration::ZERO, u64::from(RETRY_BATCH), state)
                .await?
                .len();
            run.add_done(u64::try_from(removed).unwrap_or(u64::MAX));
            if removed < RETRY_BATCH as usize {
                return Ok(());
            }
        },
    }
}
