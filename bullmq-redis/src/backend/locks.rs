//! `Locks` for Redis: `extendLock` and `extendLocks`.

use std::time::Duration;

use bullmq_core::backend::{LockToken, Locks};
use bullmq_core::{JobId, Result};
use redis::Value;

use super::RedisBackend;
use crate::error::{unexpected, wrap};
use crate::reply;
use crate::scripts;
use crate::wire;

impl Locks for RedisBackend {
    async fn extend_lock(
        &self,
        job_id: &JobId,
        token: &LockToken,
        duration: Duration,
    ) -> Result<bool> {
        const CONTEXT: &str = "extend a job lock";
        let call = wire::extend_lock(self.keys(), job_id, token, duration);
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
        let call = wire::extend_locks(self.keys(), locks, duration)?;
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
