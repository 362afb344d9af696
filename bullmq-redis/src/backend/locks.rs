//! `Locks` for Redis: `extendLock` and `extendLocks`.

use std::time::Duration;

use bullmq_core::backend::{LockToken, Locks};
use bullmq_core::{JobId, Result};
use redis::Value;

use super::RedisBackend;
use crate::error::{unexpected, wrap};
use crate::reply;
use crate::script::ScriptCall;
use crate::scripts;
use crate::wire;

/// Whole milliseconds, as Node passes the lock duration.
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Locks for RedisBackend {
    async fn extend_lock(
        &self,
        job_id: &JobId,
        token: &LockToken,
        duration: Duration,
    ) -> Result<bool> {
        const CONTEXT: &str = "extend a job lock";
        let k = self.keys();
        let call = ScriptCall::default()
            .key(k.job_key(job_id, ":lock"))
            .key(&k.stalled)
            .arg(token.as_str())
            .arg(ms(duration))
            .arg(job_id.as_bytes());
        let reply = call
            .invoke(&self.connection(), &scripts::EXTEND_LOCK)
            .await
            .map_err(wrap(CONTEXT))?;
        Ok(reply::expect_int(CONTEXT, &reply)? == 1)
    }

    async fn extend_locks(
        &self,
        locks: &[(JobId, LockToken)],
        duration: Duration,
    ) -> Result<Vec<JobId>> {
        const CONTEXT: &str = "extend job locks";
        // Nothing to renew: the script would only answer an empty list.
        if locks.is_empty() {
            return Ok(Vec::new());
        }
        let k = self.keys();
        let tokens = wire::pack_strings(locks.iter().map(|(_, t)| t.as_str()))?;
        let ids = wire::pack_ids(locks.iter().map(|(id, _)| id))?;
        let call = ScriptCall::default()
            .key(&k.stalled)
            .arg(&k.job_prefix)
            .arg(tokens)
            .arg(ids)
            .arg(ms(duration));
        let reply = call
            .invoke(&self.connection(), &scripts::EXTEND_LOCKS)
            .await
            .map_err(wrap(CONTEXT))?;
        match &reply {
            Value::Array(_) | Value::Nil => Ok(reply::id_items(&reply)),
            other => Err(unexpected(CONTEXT, other)),
        }
    }
}
