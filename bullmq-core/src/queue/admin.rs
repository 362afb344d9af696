//! Changing the queue: pause, drain, clean, obliterate, bulk retry and promotion, limits, and
//! single-job changes by id (upstream: the admin half of `Queue`).

use std::time::Duration;

use super::Queue;
use crate::backend::{Admin, Batch, Events, JobMutations, Lifecycle, ObliterateArgs, QueueMeta};
use crate::job::FinishedState;
use crate::telemetry::spans::queue as spans;
use crate::{JobId, JobState, Result};
use tracing::Instrument;

/// Upstream cleans at most this many jobs per script call.
const CLEAN_BATCH: u64 = 10_000;

impl<B: Admin + Lifecycle> Queue<B> {
    /// Pauses the queue: workers take no new jobs until [`resume`](Self::resume).
    pub async fn pause(&self) -> Result<()> {
        let span = spans::pause(self.name.as_str());
        self.backend.pause(true).instrument(span).await
    }

    /// Resumes a paused queue.
    pub async fn resume(&self) -> Result<()> {
        let span = spans::resume(self.name.as_str());
        self.backend.pause(false).instrument(span).await
    }

    /// Removes waiting jobs, and delayed ones too with `delayed`; scheduler jobs stay.
    pub async fn drain(&self, delayed: bool) -> Result<()> {
        let span = spans::drain(self.name.as_str(), delayed);
        self.backend.drain(delayed).instrument(span).await
    }

    /// Removes jobs in `state` older than `grace` (finished, or added, that long ago), at most
    /// `limit` of them (0 = no limit); returns their ids.
    pub async fn clean(&self, grace: Duration, limit: u64, state: JobState) -> Result<Vec<JobId>> {
        let span = spans::clean(self.name.as_str());
        let grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
        let max = if limit == 0 { u64::MAX } else { limit };
        let removed = self
            .clean_batches(grace_ms, max, state)
            .instrument(span.clone())
            .await?;
        spans::record_clean(&span, grace_ms, state.as_str(), max, removed.len());
        Ok(removed)
    }

    async fn clean_batches(&self, grace_ms: u64, max: u64, state: JobState) -> Result<Vec<JobId>> {
        let per_call = CLEAN_BATCH.min(max);
        let before = self.now_ms().saturating_sub(grace_ms);
        let mut removed = Vec::new();
        while u64::try_from(removed.len()).unwrap_or(u64::MAX) < max {
            let batch = u32::try_from(per_call).unwrap_or(u32::MAX);
            let ids = self
                .backend
                .clean_jobs_by_state(state, before, batch)
                .await?;
            let done = u64::try_from(ids.len()).unwrap_or(u64::MAX) < per_call;
            removed.extend(ids);
            if done {
                break;
            }
        }
        Ok(removed)
    }

    /// Destroys the queue and everything in it: pauses it, then removes `count` jobs per round
    /// until nothing is left. Refuses while jobs are active unless `force`.
    pub async fn obliterate(&self, force: bool, count: u32) -> Result<()> {
        let span = spans::obliterate(self.name.as_str());
        self.obliterate_rounds(force, count).instrument(span).await
    }

    async fn obliterate_rounds(&self, force: bool, count: u32) -> Result<()> {
        self.pause().await?;
        loop {
            match self
                .backend
                .obliterate(ObliterateArgs { force, count })
                .await?
            {
                Ok(Batch::Done) => return Ok(()),
                Ok(Batch::More) => {}
                Err(refusal) => return Err(refusal.into()),
            }
        }
    }

    /// Moves finished jobs in `state` (finished before `before_ms`, or now) back to wait,
    /// `count` per round.
    pub async fn retry_jobs(
        &self,
        state: FinishedState,
        count: u32,
        before_ms: Option<u64>,
    ) -> Result<()> {
        let before = before_ms.unwrap_or_else(|| self.now_ms());
        // Node's span carries the options as given, as JSON text.
        let options = format!(
            "{{\"count\":{count},\"state\":\"{}\",\"timestamp\":{before}}}",
            state.as_str()
        );
        let span = spans::retry_jobs(self.name.as_str(), &options);
        async {
            while self
                .backend
                .retry_finished_jobs(state, count, before)
                .await?
                == Batch::More
            {}
            Ok(())
        }
        .instrument(span)
        .await
    }

    /// Makes every delayed job ready now, `count` per round.
    pub async fn promote_jobs(&self, count: u32) -> Result<()> {
        let span = spans::promote_jobs(self.name.as_str(), &format!("{{\"count\":{count}}}"));
        async {
            while self.backend.promote_jobs(count).await? == Batch::More {}
            Ok(())
        }
        .instrument(span)
        .await
    }

    /// Rate-limits the whole queue for `expire` (upstream: `queue.rateLimit(ms)`).
    pub async fn rate_limit(&self, expire: Duration) -> Result<()> {
        let ms = u64::try_from(expire.as_millis()).unwrap_or(u64::MAX);
        let span = spans::rate_limit(self.name.as_str(), ms);
        self.backend.set_rate_limit(expire).instrument(span).await
    }

    /// Lifts a rate limit now; true if one was set.
    pub async fn remove_rate_limit_key(&self) -> Result<bool> {
        self.backend.remove_rate_limit_key().await
    }

    /// Removes job keys that no state references, `count` per round, at most `limit` (0 = all).
    pub async fn remove_orphaned_jobs(&self, count: u32, limit: u32) -> Result<u64> {
        self.backend.remove_orphaned_jobs(count, limit).await
    }
}

impl<B: QueueMeta> Queue<B> {
    /// At most `concurrency` jobs of this queue run at once, across all workers.
    pub async fn set_global_concurrency(&self, concurrency: u64) -> Result<()> {
        self.backend
            .set_queue_meta(&[("concurrency", concurrency.to_string())])
            .await
            .map(drop)
    }

    /// Lifts the global concurrency limit.
    pub async fn remove_global_concurrency(&self) -> Result<()> {
        self.backend
            .remove_queue_meta_fields(&["concurrency"])
            .await
            .map(drop)
    }

    /// At most `max` jobs per `duration`, across all workers.
    pub async fn set_global_rate_limit(&self, max: u64, duration: Duration) -> Result<()> {
        let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        self.backend
            .set_queue_meta(&[("max", max.to_string()), ("duration", ms.to_string())])
            .await
            .map(drop)
    }

    /// Lifts the global rate limit.
    pub async fn remove_global_rate_limit(&self) -> Result<()> {
        self.backend
            .remove_queue_meta_fields(&["max", "duration"])
            .await
            .map(drop)
    }
}

impl<B: JobMutations> Queue<B> {
    /// Removes a job (and, with `remove_children`, its children); false when it, or a child,
    /// is locked by a worker.
    pub async fn remove(&self, id: &JobId, remove_children: bool) -> Result<bool> {
        let span = spans::remove(self.name.as_str(), id.as_str(), remove_children);
        self.backend
            .remove(id, remove_children)
            .instrument(span)
            .await
    }

    /// Sets a job's progress.
    pub async fn update_job_progress(
        &self,
        id: &JobId,
        progress: &serde_json::Value,
    ) -> Result<()> {
        let span = spans::update_job_progress(self.name.as_str(), id.as_str(), progress);
        self.backend
            .update_progress(id, progress)
            .instrument(span)
            .await
    }

    /// Appends a line to a job's log, keeping at most `keep_logs`; returns the number of lines.
    pub async fn add_job_log(&self, id: &JobId, row: &str, keep_logs: Option<u32>) -> Result<u64> {
        self.backend.add_log(id, row, keep_logs).await
    }

    /// Frees a deduplication id, whichever job holds it; true if one did.
    pub async fn remove_deduplication_key(&self, deduplication_id: &str) -> Result<bool> {
        let span = spans::remove_deduplication_key(self.name.as_str(), deduplication_id);
        self.backend
            .delete_deduplication_key(deduplication_id)
            .instrument(span)
            .await
    }
}

impl<B: Events> Queue<B> {
    /// Trims the event stream to about `max_length` entries; returns how many were removed.
    pub async fn trim_events(&self, max_length: u64) -> Result<u64> {
        let span = spans::trim_events(self.name.as_str(), max_length);
        self.backend.trim_events(max_length).instrument(span).await
    }
}
