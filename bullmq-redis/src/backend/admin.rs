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
use crate::keys::QueueKeys;
use crate::reply;
use crate::script::ScriptCall;
use crate::scripts;

/// The suffixes of Node.js's queue key map (`QueueKeys.getKeys`, without the empty one): the
/// queue's own keys, which `removeOrphanedJobs` never mistakes for jobs and checks membership in.
const QUEUE_KEY_SUFFIXES: [&str; 18] = [
    "active",
    "wait",
    "waiting-children",
    "paused",
    "id",
    "delayed",
    "prioritized",
    "stalled-check",
    "completed",
    "failed",
    "stalled",
    "repeat",
    "limiter",
    "meta",
    "events",
    "pc",
    "marker",
    "de",
];

/// The keys a job owns besides its hash, deleted with an orphaned job.
const JOB_SUB_KEY_SUFFIXES: [&str; 6] = [
    "logs",
    "dependencies",
    "processed",
    "failed",
    "unsuccessful",
    "lock",
];

/// Node.js passes `Number.MAX_VALUE` as the cut-off when promoting: every delayed job is due.
const PROMOTE_ALL_BEFORE: &str = "1.7976931348623157e+308";

/// What Node.js's `setRateLimit` stores in the limiter: `Number.MAX_SAFE_INTEGER`, far above
/// any worker's `max`, so the limiter reads as exhausted until the key expires.
const RATE_LIMITED: u64 = 9_007_199_254_740_991;

/// The set a state lives in: `waiting` is the `wait` list, as Node.js's `clean` normalises it.
fn state_set_name(state: JobState) -> &'static str {
    match state {
        JobState::Waiting => "wait",
        other => other.as_str(),
    }
}

/// `pause-7`'s call: the source and target lists swap between pausing and resuming.
fn pause_call(keys: &QueueKeys, pause: bool, emit_event: bool) -> ScriptCall {
    let (src, dst) = if pause {
        (&keys.wait, &keys.paused)
    } else {
        (&keys.paused, &keys.wait)
    };
    ScriptCall::default()
        .key(src)
        .key(dst)
        .key(&keys.meta)
        .key(&keys.prioritized)
        .key(&keys.events)
        .key(&keys.delayed)
        .key(&keys.marker)
        .arg(if pause { "paused" } else { "resumed" })
        .arg(if emit_event { "1" } else { "0" })
}

/// `moveJobsToWait-8`'s call, shared by bulk retry and bulk promote.
fn move_jobs_to_wait_call(
    keys: &QueueKeys,
    state: &str,
    count: u32,
    before: impl redis::ToRedisArgs,
) -> ScriptCall {
    ScriptCall::default()
        .key(&keys.job_prefix)
        .key(&keys.events)
        .key(keys.to_key(state))
        .key(&keys.wait)
        .key(&keys.paused)
        .key(&keys.meta)
        .key(&keys.active)
        .key(&keys.marker)
        .arg(count)
        .arg(before)
        .arg(state)
}

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
    if suffix.is_empty() || QUEUE_KEY_SUFFIXES.contains(&suffix) {
        return None;
    }
    match suffix.split_once(':') {
        None => Some(suffix),
        Some((head, _)) if QUEUE_KEY_SUFFIXES.contains(&head) => None,
        Some((id, sub)) if JOB_SUB_KEY_SUFFIXES.contains(&sub) => Some(id),
        Some(_) => None,
    }
}

impl RedisBackend {
    /// One `removeOrphanedJobs-1` call: checks `candidates` against every state key and deletes
    /// the ones no state references, atomically.
    async fn remove_orphaned_batch(&self, candidates: &[String]) -> Result<u64> {
        let keys = self.keys();
        let call = ScriptCall::default()
            .key(&keys.job_prefix)
            .arg(QUEUE_KEY_SUFFIXES.len())
            .arg(&QUEUE_KEY_SUFFIXES[..])
            .arg(JOB_SUB_KEY_SUFFIXES.len())
            .arg(&JOB_SUB_KEY_SUFFIXES[..])
            .arg(candidates);
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
            pause_call(self.keys(), true, true)
                .invoke(&con, &scripts::PAUSE)
                .await
                .map_err(wrap("pause the queue"))?;
            return Ok(());
        }
        // Resuming moves legacy `paused` jobs back in slices; only the first call emits
        // `resumed`, the others just keep moving until nothing is left.
        let mut emit_event = true;
        loop {
            let reply = pause_call(self.keys(), false, emit_event)
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
        let keys = self.keys();
        ScriptCall::default()
            .key(&keys.wait)
            .key(&keys.paused)
            .key(&keys.delayed)
            .key(&keys.prioritized)
            .key(&keys.repeat)
            .arg(&keys.job_prefix)
            .arg(if delayed { "1" } else { "0" })
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
        let keys = self.keys();
        let set = state_set_name(state);
        let reply = ScriptCall::default()
            .key(keys.to_key(set))
            .key(&keys.events)
            .key(&keys.repeat)
            .arg(&keys.job_prefix)
            .arg(before_ms)
            .arg(limit)
            .arg(set)
            .invoke(&self.connection(), &scripts::CLEAN_JOBS_IN_SET)
            .await
            .map_err(wrap("clean jobs"))?;
        Ok(reply::id_items(&reply))
    }

    async fn obliterate(&self, args: ObliterateArgs) -> Result<Result<Batch, ObliterateRefusal>> {
        let keys = self.keys();
        let reply = ScriptCall::default()
            .key(&keys.meta)
            .key(&keys.job_prefix)
            .arg(args.count)
            // Node.js sends `null` when not forced, which its client writes as an empty string.
            .arg(if args.force { "force" } else { "" })
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
        let reply = move_jobs_to_wait_call(self.keys(), state.as_str(), count, before_ms)
            .invoke(&self.connection(), &scripts::MOVE_JOBS_TO_WAIT)
            .await
            .map_err(wrap("retry finished jobs"))?;
        batch("retry finished jobs", &reply)
    }

    async fn promote_jobs(&self, count: u32) -> Result<Batch> {
        let reply = move_jobs_to_wait_call(self.keys(), "delayed", count, PROMOTE_ALL_BEFORE)
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
        let mut con = self.connection();
        let mut cursor = 0_u64;
        let mut removed = 0;
        loop {
            let (next, scanned): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(count)
                .query_async(&mut con)
                .await
                .map_err(wrap("scan for orphaned jobs"))?;
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
        let ms = u64::try_from(expire.as_millis()).unwrap_or(u64::MAX);
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
