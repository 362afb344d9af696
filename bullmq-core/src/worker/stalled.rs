//! The stalled-jobs check: every `stalled_interval`, jobs whose lock expired are moved back to
//! wait, or failed once they stalled more than `max_stalled_count` times (upstream:
//! `Worker#stalledChecker`, `moveStalledJobsToWait`).

use std::sync::Arc;

use super::events::WorkerEvent;
use super::shared::Shared;
use crate::backend::{Backend, StalledCheck};
use crate::telemetry::{metrics, spans};
use tracing::Instrument;

/// Runs the check at once, then every interval, until the worker closes; skipped while paused.
pub(crate) async fn check_stalled<B: Backend>(shared: Arc<Shared<B>>) {
    let check = StalledCheck {
        max_stalled_count: shared.opts.max_stalled_count,
        stalled_interval: shared.opts.stalled_interval,
    };
    while !shared.shutdown.is_cancelled() {
        if !shared.is_paused() {
            let queue = shared.queue.name().as_str();
            let span = spans::stalled_check(queue, shared.opts.name.as_deref(), shared.id());
            match shared
                .queue
                .backend()
                .move_stalled_jobs_to_wait(&check)
                .instrument(span.clone())
                .await
            {
                Ok(ids) => {
                    spans::record_stalled(&span, &ids);
                    if !ids.is_empty() {
                        metrics::stalled(queue, u64::try_from(ids.len()).unwrap_or(u64::MAX));
                        tracing::info!(target: "bullmq", queue, recovered = ids.len(), "stalled jobs recovered");
                    }
                    for job_id in ids {
                        shared.emit(WorkerEvent::Stalled { job_id });
                    }
                }
                Err(err) => {
                    // Node's span records what its check threw.
                    spans::record_exception(&span, &err.to_string());
                    shared.emit_error(err);
                }
            }
        }
        // The first check has run (or was skipped while paused): the main loop may start.
        shared.first_check.cancel();
        shared.sleep(check.stalled_interval).await;
    }
}
