//! Taking the next job: a blocking wait on the queue's marker while the queue is drained, then
//! `moveToActive` (upstream: `Worker#_getNextJob`, `waitForJob`, `moveToActive`).

use std::sync::atomic::Ordering;
use std::time::Duration;

use tracing::Instrument;

use super::shared::Shared;
use crate::backend::{Backend, FetchParams, FetchedJob, LockToken, NextJob};
use crate::options::ValidationError;
use crate::scheduling::advance::advance_job_scheduler;
use crate::telemetry::{metrics, spans};
use crate::{Error, Job, Result};

/// The pause after a failed blocking wait (upstream: `DELAY_TIME_1`).
const WAIT_RETRY_DELAY: Duration = Duration::from_millis(100);

/// The longest pause between two fetches while the blocking wait is refused (see
/// `wait_for_job`): how late a job added meanwhile may be taken.
const REFUSED_WAIT_POLL: Duration = Duration::from_secs(1);

impl<B: Backend> Shared<B> {
    /// The next job for `token`, if any: waits on the marker first when the queue was found
    /// empty and `block` is set.
    pub(crate) async fn get_next(
        &self,
        token: &LockToken,
        block: bool,
    ) -> Result<Option<FetchedJob>> {
        if self.is_paused() || self.is_closing() {
            return Ok(None);
        }
        let limited = self.limit_until.load(Ordering::SeqCst) != 0;
        if self.drained.load(Ordering::SeqCst) && block && !limited {
            let block_until = self.wait_for_job().await;
            self.block_until.store(block_until, Ordering::SeqCst);
            // `pause` and `close` end the wait: take nothing after either.
            if self.is_paused() || self.is_closing() {
                return Ok(None);
            }
            if block_until == 0 || block_until <= self.now_ms() {
                return self.move_to_active(token).await;
            }
            return Ok(None);
        }
        if self.is_rate_limited() {
            return Ok(None);
        }
        self.move_to_active(token).await
    }

    /// `moveToActive` with this worker's settings.
    pub(crate) async fn move_to_active(&self, token: &LockToken) -> Result<Option<FetchedJob>> {
        let fetch = FetchParams {
            token: token.clone(),
            lock_duration: self.opts.lock_duration,
            limiter: self.opts.limiter,
            worker_name: self.opts.name.clone(),
        };
        let next = self.queue.backend().move_to_active(&fetch).await?;
        self.health.record_ok(self.now_ms());
        Ok(self.take(next))
    }

    /// Records what a fetch reported and returns its job (upstream: `nextJobFromJobData`).
    pub(crate) fn take(&self, next: NextJob) -> Option<FetchedJob> {
        self.update_delays(&next);
        match next.job {
            None => {
                self.mark_drained();
                None
            }
            Some(job) => {
                self.drained.store(false, Ordering::SeqCst);
                Some(job)
            }
        }
    }

    /// Adds the next iteration of the scheduler that produced `job`, if one did, before `job`
    /// runs (upstream: `nextJobFromJobData`). A failure is reported as an error event, worded
    /// as upstream's, and never stops the job from running.
    pub(crate) async fn advance_scheduler(&self, job: &Job) {
        let Some(scheduler_id) = &job.repeat_job_key else {
            return;
        };
        // Node's worker upserts the next iteration in an `add <queue>.<job name>` producer
        // span, inside the attempt's span.
        let span = spans::scheduler_add(self.queue.name().as_str(), &job.name, scheduler_id);
        let advanced = advance_job_scheduler(
            self.queue.backend(),
            job,
            scheduler_id,
            self.now_ms(),
            self.repeat_strategy.as_ref(),
        )
        .instrument(span.clone())
        .await;
        match advanced {
            Ok(Some(id)) => {
                spans::record_job_id(&span, id.as_str());
                metrics::record_added(self.queue.name().as_str(), &job.name, 1);
            }
            Ok(None) => {}
            Err(Error::Invalid(v)) => self.emit_error(Error::Invalid(ValidationError::single(
                "repeat",
                "repeat",
                format!("Failed to add repeatable job for next iteration: {v}"),
            ))),
            Err(other) => self.emit_error(other),
        }
    }

    /// Blocks on the marker; returns when the next job can be taken (Unix ms, 0 = now), or
    /// `u64::MAX` when the wait failed or should not happen (upstream: `waitForJob`).
    async fn wait_for_job(&self) -> u64 {
        if self.is_paused() || self.is_closing() || self.is_rate_limited() {
            return u64::MAX;
        }
        let block_until = self.block_until.load(Ordering::SeqCst);
        let Some(timeout) = self.block_timeout(block_until) else {
            return 0;
        };
        // Delays are only meaningful for one wait (upstream resets them here too).
        self.limit_until.store(0, Ordering::SeqCst);
        self.block_until.store(0, Ordering::SeqCst);
        let waited = self.queue.backend().wait_for_job(timeout).await;
        if waited.is_ok() {
            self.wait_failures.recovered();
            self.health.record_ok(self.now_ms());
        }
        match waited {
            Ok(Some(marker)) if block_until != 0 && marker.score > block_until => block_until,
            Ok(Some(marker)) => marker.score,
            Ok(None) => 0,
            Err(err) if !err.is_connection_failure() => {
                // Refused (`NOPERM`, `READONLY`, …) on a working connection: retrying the
                // wait at once would only repeat the refusal, and never take a job. Fetch
                // without blocking instead, after a bounded pause; say so once per cause.
                self.health.record_failure();
                if self.wait_failures.failed(&err) && !self.is_closing() {
                    self.emit_error(err);
                }
                self.sleep(timeout.clamp(WAIT_RETRY_DELAY, REFUSED_WAIT_POLL))
                    .await;
                0
            }
            Err(err) => {
                self.wait_failures.failed(&err);
                self.health.record_failure();
                if !self.is_closing() {
                    if let Err(err) = self.queue.backend().reconnect_blocking().await
                        && !err.is_connection_failure()
                    {
                        self.emit_error(err);
                    }
                    self.sleep(WAIT_RETRY_DELAY).await;
                }
                u64::MAX
            }
        }
    }

    /// How long to block: until the next delayed job (within the store's bounds), else the
    /// drain delay; `None` when a delayed job is already due.
    fn block_timeout(&self, block_until: u64) -> Option<Duration> {
        let bounds = self.queue.backend().block_timeouts();
        if block_until == 0 {
            return Some(self.opts.drain_delay.max(bounds.minimum));
        }
        let now = self.now_ms();
        if block_until <= now {
            return None;
        }
        let delay = Duration::from_millis(block_until - now);
        Some(if delay < bounds.minimum {
            bounds.minimum
        } else {
            delay.min(bounds.maximum)
        })
    }

    /// Waits while the queue is rate limited, at most `maximum_rate_limit_delay` at a time so
    /// that delayed jobs still get promoted (upstream: `waitForRateLimit`).
    pub(crate) async fn wait_for_rate_limit(&self) {
        let until = self.limit_until.load(Ordering::SeqCst);
        let now = self.now_ms();
        if until > now {
            let delay = Duration::from_millis(until - now).min(self.opts.maximum_rate_limit_delay);
            self.sleep(delay).await;
            self.drained.store(false, Ordering::SeqCst);
            self.limit_until.store(0, Ordering::SeqCst);
        }
    }
}
