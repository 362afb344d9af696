//! `Admin` for Redis: `pause`, `drain`, `cleanJobsInSet`, `obliterate`, `moveJobsToWait` (bulk
//! retry and promote), `removeOrphanedJobs` (a `SCAN` loop feeding the script, as Node.js does)
//! and the plain-command helpers around the rate limiter.

use std::collections::HashSet;
use std::time::Duration;

use bullmq_core::backend::{Admin, Batch, ObliterateArgs, ObliterateRefusal};
use bullmq_core::job::FinishedState;
use bullmq_core::{JobId, JobState, Result};
use redis::AsyncCommands;

use super::RedisBackend;
use crate::error::{unexpected, wrap};
use crate::reply;
use crate::scripts;
use crate::wire;

/// What Node.js's `setRateLimit` stores in the limiter: `Number.MAX_SAFE_INTEGER`, far above
/// any worker's `max`, so the limiter reads as exhausted until the key expires.
const RATE_LIMITED: u64 = 9_007_199_254_740_991;

/// The batch scripts answer 1 while work remains and 0 when done.
fn batch(context: &'static str, reply: &redis::Value) -> Result<Batch> {
    match reply::expect_int(context, reply)? {
        0 => Ok(Batch::Done),
        1 => Ok(Batch::More),
        _ => Err(unexpected(context, reply)),
    }
}

/// The job ids a scanned key may belong to, by Node.js's rules: a job hash
/// (`<prefix>:<queue>:<id>`) or one of a job's known sub-keys (`…:<id>:logs`), never one of
/// the queue's own keys or anything under them (`repeat:…`, `de:…`).
fn orphan_candidate<'k>(key: &'k str, job_prefix: &str) -> Option<&'k str> {
    let suffix = key.strip_prefix(job_prefix)?;
    if suffix.is_empty() || wire::QUEUE_KEY_SUFFIXES.contains(&suffix) {
        return None;
    }
    match suffix.split_once(':') {
        None => Some(suffix),
        Some((head, _)) if wire::QUEUE_KEY_SUFFIXES.contains(&head) => None,
        Some((id, sub)) if wire::JOB_SUB_KEY_SUFFIXES.contains(&sub) => Some(id),
        Some(_) => None,
    }
}

impl RedisBackend {
    /// One `removeOrphanedJobs-1` call: checks `candidates` against every state key and deletes
    /// the ones no state references, atomically.
    async fn remove_orphaned_batch(&self, candidates: &[String]) -> Result<u64> {
        let call = wire::remove_orphaned_jobs(self.keys(), candidates);
        let reply = call
            .invoke(&self.connection(), &scripts::REMOVE_ORPHANED_JOBS)
            .await
            .map_err(wrap("remove orphaned jobs"))?;
        let removed = reply::expect_int("remove orphaned jobs", &reply)?;
        Ok(u64::try_from(removed).unwrap_or_default())
    }
}

impl Admin for RedisBackend {
    async fn pause(&self, pause: bool) -> Result<()> {
        let con = self.connection();
        if pause {
            wire::pause(self.keys(), true, true)
                .invoke(&con, &scripts::PAUSE)
                .await
                .map_err(wrap("pause the queue"))?;
            return Ok(());
        }
        // Resuming moves legacy `paused` jobs back in slices; only the first call emits
        // `resumed`, the others just keep moving until nothing is left.
        let mut emit_event = true;
        loop {
            let reply = wire::pause(self.keys(), false, emit_event)
                .invoke(&con, &scripts::PAUSE)
                .await
                .map_err(wrap("resume the queue"))?;
            emit_event = false;
            if reply::expect_int("resume the queue", &reply)? <= 0 {
                return Ok(());
            }
        }
    }

    async fn drain(&self, delayed: bool) -> Result<()> {
        wire::drain(self.keys(), delayed)
            .invoke(&self.connection(), &scripts::DRAIN)
            .await
            .map_err(wrap("drain the queue"))?;
        Ok(())
    }

    async fn clean_jobs_by_state(
        &self,
        state: JobState,
        before_ms: u64,
        limit: u32,
    ) -> Result<Vec<JobId>> {
        let reply = wire::clean_jobs_in_set(self.keys(), state, before_ms, limit)
            .invoke(&self.connection(), &scripts::CLEAN_JOBS_IN_SET)
            .await
            .map_err(wrap("clean jobs"))?;
        Ok(reply::id_items(&reply))
    }

    async fn obliterate(&self, args: ObliterateArgs) -> Result<Result<Batch, ObliterateRefusal>> {
        let reply = wire::obliterate(self.keys(), args)
            .invoke(&self.connection(), &scripts::OBLITERATE)
            .await
            .map_err(wrap("obliterate the queue"))?;
        match reply::expect_int("obliterate the queue", &reply)? {
            -1 => Ok(Err(ObliterateRefusal::NotPaused)),
            -2 => Ok(Err(ObliterateRefusal::ActiveJobs)),
            _ => batch("obliterate the queue", &reply).map(Ok),
        }
    }

    async fn retry_finished_jobs(
        &self,
        state: FinishedState,
        count: u32,
        before_ms: u64,
    ) -> Result<Batch> {
        let reply = wire::move_jobs_to_wait(self.keys(), state.as_str(), count, before_ms)
            .invoke(&self.connection(), &scripts::MOVE_JOBS_TO_WAIT)
            .await
            .map_err(wrap("retry finished jobs"))?;
        batch("retry finished jobs", &reply)
    }

    async fn promote_jobs(&self, count: u32) -> Result<Batch> {
        let reply =
            wire::move_jobs_to_wait(self.keys(), "delayed", count, wire::PROMOTE_ALL_BEFORE)
                .invoke(&self.connection(), &scripts::MOVE_JOBS_TO_WAIT)
                .await
                .map_err(wrap("promote delayed jobs"))?;
        batch("promote delayed jobs", &reply)
    }

    async fn remove_orphaned_jobs(&self, count: u32, limit: u32) -> Result<u64> {
        let job_prefix = &self.keys().job_prefix;
        let pattern = format!("{job_prefix}*");
        // SCAN rejects a zero COUNT; Node.js would fail there, we scan with the smallest hint.
        let count = count.max(1);
        let mut cursor = 0_u64;
        let mut removed = 0;
        loop {
            let (next, scanned) = self
                .scan_round(cursor, &pattern, count, "scan for orphaned jobs")
                .await?;
            cursor = next;
            let mut seen = HashSet::new();
            let candidates: Vec<String> = scanned
                .iter()
                .filter_map(|key| orphan_candidate(key, job_prefix))
                .filter(|id| seen.insert(*id))
                .map(str::to_owned)
                .collect();
            if !candidates.is_empty() {
                removed += self.remove_orphaned_batch(&candidates).await?;
                if limit > 0 && removed >= u64::from(limit) {
                    break;
                }
            }
            if cursor == 0 {
                break;
            }
        }
        Ok(removed)
    }

    async fn set_rate_limit(&self, expire: Duration) -> Result<()> {
        let ms = crate::wire::ms(expire);
        redis::cmd("SET")
            .arg(&self.keys().limiter)
            .arg(RATE_LIMITED)
            .arg("PX")
            .arg(ms)
            .query_async::<()>(&mut self.connection())
            .await
            .map_err(wrap("set the rate limit"))
    }

    async fn remove_rate_limit_key(&self) -> Result<bool> {
        let removed: u64 = self
            .connection()
            .del(&self.keys().limiter)
            .await
            .map_err(wrap("remove the rate limit key"))?;
        Ok(removed > 0)
    }

    async fn remove_deprecated_priority_key(&self) -> Result<u64> {
        self.connection()
            .del(self.keys().to_key("priority"))
            .await
            .map_err(wrap("remove the deprecated priority key"))
    }
}

#[cfg(test)]
mod tests {
    use super::orphan_candidate;

    #[test]
    fn orphan_candidates_follow_node() {
        let p = "bull:q:";
        assert_eq!(orphan_candidate("bull:q:42", p), Some("42"));
        assert_eq!(orphan_candidate("bull:q:42:logs", p), Some("42"));
        assert_eq!(orphan_candidate("bull:q:42:lock", p), Some("42"));
        assert_eq!(orphan_candidate("bull:q:42:other", p), None);
        assert_eq!(orphan_candidate("bull:q:wait", p), None);
        assert_eq!(orphan_candidate("bull:q:repeat:s1", p), None);
        assert_eq!(orphan_candidate("bull:q:de:d1", p), None);
        assert_eq!(orphan_candidate("bull:q:metrics:completed", p), None);
        assert_eq!(orphan_candidate("bull:q:", p), None);
    }
}
