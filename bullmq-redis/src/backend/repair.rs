//! Jobs another runtime wrote oddly, handled around upstream's scripts (which we run verbatim):
//! a fetched job's hash is repaired before any script touches it again, a finished job fetched
//! a second time (its id was in `wait` twice) is dropped instead of run again, and a fetch that
//! the script could not finish (`HINCRBY ats` on a field that is not a count) is completed here.
//!
//! A Lua script is not rolled back when it fails: `moveToFinished` removes the job from
//! `active` before `HINCRBY atm`, `moveStalledJobsToWait` before `HINCRBY stc`. Failing there
//! would leave the job in no list at all, so the fields are rewritten first.

use bullmq_core::backend::NextJob;
use bullmq_core::codec::{HashRepair, hash_repairs};
use bullmq_core::{JobId, Result};
use redis::Value;

use super::RedisBackend;
use crate::error::wrap;
use crate::reply;

/// How far into `active` a failed fetch looks for the job it took (the scripts push it at the
/// head; other workers may push theirs meanwhile).
const RECOVER_SCAN: isize = 32;

/// Whether a script failed on `HINCRBY` of a field that is not a count.
pub(crate) fn is_not_a_count(err: &bullmq_core::Error) -> bool {
    err.to_string().contains("hash value is not an integer")
}

impl RedisBackend {
    /// A fetch reply as the worker should see it: the job's hash repaired where the scripts
    /// could not work with it, and a finished job fetched again dropped (no job then).
    pub(crate) async fn settle_fetch(
        &self,
        context: &'static str,
        reply: &Value,
        token: &str,
    ) -> Result<NextJob> {
        let mut next = reply::next_job(context, reply)?;
        let (Some(fetched), Some(fields)) = (&next.job, reply::fetched_fields(reply)) else {
            return Ok(next);
        };
        if !reply::needs_attention(fields) {
            return Ok(next);
        }
        let pairs = reply::text_pairs(fields);
        self.repair(&fetched.id, &hash_repairs(&pairs)).await?;
        let finished = pairs
            .iter()
            .any(|(k, v)| k == "finishedOn" && !v.is_empty());
        if finished && self.is_finished(&fetched.id).await? {
            let id = fetched.id.clone();
            self.drop_from_active(&id, token).await?;
            tracing::warn!(
                job = %id,
                "redis: fetched a job that had already finished (its id was in the list twice); \
                 dropped from active without running it again"
            );
            next.job = None;
        }
        Ok(next)
    }

    /// Rewrites the fields `repairs` names, in one `MULTI`.
    async fn repair(&self, id: &JobId, repairs: &[HashRepair]) -> Result<()> {
        if repairs.is_empty() {
            return Ok(());
        }
        let key = self.keys().job_key(id, "");
        let mut pipe = redis::pipe();
        pipe.atomic();
        for fix in repairs {
            tracing::warn!(
                job = %id,
                field = fix.field,
                found = fix.found.as_str(),
                to = fix.value.as_deref().unwrap_or("(deleted)"),
                "redis: a job field the scripts cannot work with was rewritten"
            );
            match &fix.value {
                Some(value) => pipe.hset(&key, fix.field, value).ignore(),
                None => pipe.hdel(&key, fix.field).ignore(),
            };
        }
        pipe.query_async::<()>(&mut self.connection())
            .await
            .map_err(wrap("repair a job hash"))
    }

    /// Whether the job is in `completed` or `failed`.
    async fn is_finished(&self, id: &JobId) -> Result<bool> {
        let k = self.keys();
        let (completed, failed): (Option<f64>, Option<f64>) = redis::pipe()
            .zscore(&k.completed, id.as_bytes())
            .zscore(&k.failed, id.as_bytes())
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("look for a fetched job among the finished"))?;
        Ok(completed.is_some() || failed.is_some())
    }

    /// Takes a job out of `active` (and the stalled set) and releases the lock the fetch took.
    async fn drop_from_active(&self, id: &JobId, token: &str) -> Result<()> {
        let k = self.keys();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .lrem(&k.active, 1, id.as_bytes())
            .ignore()
            .srem(&k.stalled, id.as_bytes())
            .ignore();
        if token != "0" {
            pipe.del(k.job_key(id, ":lock")).ignore();
        }
        pipe.query_async::<()>(&mut self.connection())
            .await
            .map_err(wrap("drop a finished job from active"))
    }

    /// Repairs the jobs `moveStalledJobsToWait` is about to count (the members of the stalled
    /// set): it removes each from `active` before `HINCRBY stc`, so a count another runtime
    /// garbled there would leave the job in no list. The set holds only the jobs whose lock
    /// was not renewed since the last check, so this is one `SMEMBERS` per check and rarely
    /// more.
    pub(crate) async fn repair_stalled_candidates(&self) -> Result<()> {
        const FIELDS: [&str; 5] = ["atm", "ats", "stc", "attemptsMade", "parent"];
        let k = self.keys();
        // While another worker's check holds `stalled-check`, this one's script does nothing:
        // nor does the repair, which would read every candidate's counters for nothing.
        let (checked, ids): (bool, Vec<Vec<u8>>) = redis::pipe()
            .cmd("EXISTS")
            .arg(&k.stalled_check)
            .cmd("SMEMBERS")
            .arg(&k.stalled)
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("read the stalled set"))?;
        if checked || ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<JobId> = ids.iter().map(|raw| JobId::from_bytes(raw)).collect();
        let mut pipe = redis::pipe();
        for id in &ids {
            pipe.cmd("HMGET").arg(k.job_key(id, "")).arg(&FIELDS);
        }
        let values: Vec<Vec<Option<Vec<u8>>>> = pipe
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("read the counters of stalled jobs"))?;
        for (id, values) in ids.iter().zip(values) {
            let pairs: Vec<(&str, String)> = FIELDS
                .iter()
                .zip(values)
                .filter_map(|(field, v)| Some((*field, String::from_utf8_lossy(&v?).into_owned())))
                .collect();
            self.repair(id, &hash_repairs(&pairs)).await?;
        }
        Ok(())
    }

    /// Completes a fetch whose script failed on `HINCRBY ats` (a count another runtime wrote
    /// as text): the job is in `active` under `token`'s lock by then. Its counters are repaired,
    /// the start counted, and the job returned; `None` when no such job is found.
    pub(crate) async fn recover_fetch(&self, token: &str) -> Result<Option<NextJob>> {
        if token == "0" {
            return Ok(None);
        }
        let k = self.keys();
        let ids: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg(&k.active)
            .arg(0)
            .arg(RECOVER_SCAN - 1)
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("look for a fetched job in active"))?;
        for raw in ids {
            let id = JobId::from_bytes(&raw);
            let (lock, fields): (Option<Vec<u8>>, Value) = redis::pipe()
                .get(k.job_key(&id, ":lock"))
                .hgetall(k.job_key(&id, ""))
                .query_async(&mut self.connection())
                .await
                .map_err(wrap("read a fetched job"))?;
            if lock.as_deref() != Some(token.as_bytes()) {
                continue;
            }
            let repairs = hash_repairs(&reply::text_pairs(&fields));
            if !repairs.iter().any(|r| r.field == "ats") {
                continue;
            }
            self.repair(&id, &repairs).await?;
            // The start the script could not count.
            let fields: Value = redis::pipe()
                .hincr(k.job_key(&id, ""), "ats", 1)
                .ignore()
                .hgetall(k.job_key(&id, ""))
                .query_async::<(Value,)>(&mut self.connection())
                .await
                .map(|(fields,)| fields)
                .map_err(wrap("count a recovered fetch"))?;
            return Ok(Some(NextJob {
                job: Some(reply::fetched_job(id, &fields)),
                ..NextJob::default()
            }));
        }
        Ok(None)
    }
}
