//! `Schedulers` for Redis: `addJobScheduler`, `updateJobScheduler`, `removeJobScheduler` and
//! `getJobScheduler` scripts (their calls built in [`crate::wire`]), and the plain commands
//! Node.js uses to list and count schedulers.
//!
//! The scripts name each iteration `repeat:<scheduler id>:<next millis>` themselves; we only
//! pass the ids and timestamps through, so both runtimes produce the same ids.

use std::time::Duration;

use bullmq_core::backend::{
    AddJobSchedulerArgs, JobSchedulerRecord, NextIterationArgs, Schedulers,
};
use bullmq_core::{JobId, Result, ScriptError, ScriptErrorCode};
use redis::{AsyncCommands, Value};

use super::RedisBackend;
use crate::error::{unexpected, wrap};
use crate::reply;
use crate::scripts;
use crate::wire;

impl RedisBackend {
    /// The scheduler's metadata hash, `<prefix>:<queue>:repeat:<id>`.
    fn scheduler_key(&self, scheduler_id: &str) -> String {
        format!("{}:{scheduler_id}", self.keys().repeat)
    }
}

/// `addJobScheduler` answers `[job id, delay]`, or a negative code when the iteration's slot
/// is taken.
fn added_iteration(reply: &Value) -> Result<(JobId, Duration)> {
    const CONTEXT: &str = "add a job scheduler";
    if let Some(code) = reply::int(reply) {
        let code = ScriptErrorCode::try_from(code).map_err(|_| unexpected(CONTEXT, reply))?;
        return Err(ScriptError {
            code,
            command: "addJobScheduler",
            job_id: None,
            parent_key: None,
            state: None,
        }
        .into());
    }
    match reply::items(reply) {
        [id, delay] => {
            let id = reply::text(id).ok_or_else(|| unexpected(CONTEXT, reply))?;
            let delay = reply::expect_int(CONTEXT, delay)?;
            let delay = Duration::from_millis(u64::try_from(delay).unwrap_or_default());
            Ok((JobId::from(id), delay))
        }
        _ => Err(unexpected(CONTEXT, reply)),
    }
}

impl Schedulers for RedisBackend {
    async fn add_job_scheduler(&self, args: &AddJobSchedulerArgs) -> Result<(JobId, Duration)> {
        let call = wire::add_job_scheduler(self.keys(), args, self.now_ms())?;
        let reply = call
            .invoke(&self.connection(), &scripts::ADD_JOB_SCHEDULER)
            .await
            .map_err(wrap("add a job scheduler"))?;
        added_iteration(&reply)
    }

    async fn update_job_scheduler_next_millis(
        &self,
        args: &NextIterationArgs,
    ) -> Result<Option<JobId>> {
        let call = wire::update_job_scheduler(self.keys(), args, self.now_ms())?;
        let reply = call
            .invoke(&self.connection(), &scripts::UPDATE_JOB_SCHEDULER)
            .await
            .map_err(wrap("update a job scheduler"))?;
        // Nil when the scheduler is gone or another producer already added the iteration.
        Ok(reply::text(&reply).map(JobId::from))
    }

    async fn remove_job_scheduler(&self, scheduler_id: &str) -> Result<bool> {
        let reply = wire::remove_job_scheduler(self.keys(), scheduler_id)
            .invoke(&self.connection(), &scripts::REMOVE_JOB_SCHEDULER)
            .await
            .map_err(wrap("remove a job scheduler"))?;
        // 0: removed; 1: there was no such scheduler.
        Ok(reply::expect_int("remove a job scheduler", &reply)? == 0)
    }

    async fn get_job_scheduler(&self, scheduler_id: &str) -> Result<Option<JobSchedulerRecord>> {
        const CONTEXT: &str = "read a job scheduler";
        let reply = wire::get_job_scheduler(self.keys(), scheduler_id)
            .invoke(&self.connection(), &scripts::GET_JOB_SCHEDULER)
            .await
            .map_err(wrap(CONTEXT))?;
        // `[hash fields, score]`; a Lua `{nil, nil}` arrives as an empty array.
        let (hash, score) = match reply::items(&reply) {
            [] => return Ok(None),
            [hash, score] => (hash, score),
            _ => return Err(unexpected(CONTEXT, &reply)),
        };
        let fields = reply::field_pairs(scheduler_id, hash)?
            .into_iter()
            .map(|(k, v)| (k.into_owned(), v.into_owned()));
        let next = reply::int(score).and_then(|n| u64::try_from(n).ok());
        Ok(JobSchedulerRecord::from_hash(scheduler_id, fields, next)?)
    }

    async fn is_job_scheduler(&self, id: &str) -> Result<bool> {
        // `ic` is written only by `storeJobScheduler`, so legacy repeatable entries in the same
        // sorted set do not count.
        self.connection()
            .hexists(self.scheduler_key(id), "ic")
            .await
            .map_err(wrap("check for a job scheduler"))
    }

    async fn get_job_schedulers_range(
        &self,
        start: i64,
        end: i64,
        asc: bool,
    ) -> Result<Vec<(String, u64)>> {
        const CONTEXT: &str = "list job schedulers";
        let command = if asc { "ZRANGE" } else { "ZREVRANGE" };
        let reply: Value = redis::cmd(command)
            .arg(&self.keys().repeat)
            .arg(start)
            .arg(end)
            .arg("WITHSCORES")
            .query_async(&mut self.connection())
            .await
            .map_err(wrap(CONTEXT))?;
        reply::scored_members(CONTEXT, &reply)
    }

    async fn get_job_schedulers_count(&self) -> Result<u64> {
        self.connection()
            .zcard(&self.keys().repeat)
            .await
            .map_err(wrap("count job schedulers"))
    }
}
