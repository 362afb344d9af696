//! `JobMutations` for Redis: `updateData`, `updateProgress`, `addLog`, `changeDelay`,
//! `changePriority`, `removeJob`, `removeUnprocessedChildren`, `removeChildDependency` and
//! `removeDeduplicationKey`, plus the plain commands Node.js uses for `clearLogs` and
//! `deleteDeduplicationKey`.

use std::time::Duration;

use bullmq_core::backend::JobMutations;
use bullmq_core::codec::CodecError;
use bullmq_core::{JobId, Result, ScriptError, ScriptErrorCode};
use redis::{AsyncCommands, Value};

use super::RedisBackend;
use crate::error::{unexpected, wrap};
use crate::reply;
use crate::script::ScriptCall;
use crate::scripts::{self, LuaScript};
use crate::wire;

/// How a script's negative answer is reported: upstream's command name, plus the parent key
/// and the expected state where upstream's message names them.
#[derive(Clone, Copy)]
struct Refusal<'a> {
    command: &'static str,
    job_id: &'a JobId,
    parent_key: Option<&'a str>,
    state: Option<&'static str>,
}

impl<'a> Refusal<'a> {
    fn new(command: &'static str, job_id: &'a JobId) -> Self {
        Self {
            command,
            job_id,
            parent_key: None,
            state: None,
        }
    }

    /// The reply as a status code: negative ones become the script error, others are returned.
    fn check(self, context: &'static str, reply: &Value) -> Result<i64> {
        let code = reply::expect_int(context, reply)?;
        if code >= 0 {
            return Ok(code);
        }
        let code = ScriptErrorCode::try_from(code).map_err(|_| unexpected(context, reply))?;
        Err(ScriptError {
            code,
            command: self.command,
            job_id: Some(self.job_id.to_string()),
            parent_key: self.parent_key.map(str::to_owned),
            state: self.state.map(str::to_owned),
        }
        .into())
    }
}

impl RedisBackend {
    /// Runs `script` and reads its status code, mapping refusals to script errors.
    async fn run_checked(
        &self,
        call: ScriptCall,
        script: &LuaScript,
        context: &'static str,
        refusal: Refusal<'_>,
    ) -> Result<i64> {
        let reply = call
            .invoke(&self.connection(), script)
            .await
            .map_err(wrap(context))?;
        refusal.check(context, &reply)
    }

    fn logs_key(&self, job_id: &JobId) -> Vec<u8> {
        self.keys().job_key(job_id, ":logs")
    }
}

impl JobMutations for RedisBackend {
    async fn update_data(&self, job_id: &JobId, data: &str) -> Result<()> {
        let call = wire::update_data(self.keys(), job_id, data);
        let refusal = Refusal::new("updateData", job_id);
        self.run_checked(call, &scripts::UPDATE_DATA, "update job data", refusal)
            .await?;
        Ok(())
    }

    async fn update_progress(&self, job_id: &JobId, progress: &serde_json::Value) -> Result<()> {
        let progress = bullmq_core::json::to_string(progress).map_err(|e| CodecError::Encode {
            what: "job progress",
            reason: e.to_string(),
        })?;
        let call = wire::update_progress(self.keys(), job_id, &progress);
        let refusal = Refusal::new("updateProgress", job_id);
        self.run_checked(
            call,
            &scripts::UPDATE_PROGRESS,
            "update job progress",
            refusal,
        )
        .await?;
        Ok(())
    }

    async fn add_log(&self, job_id: &JobId, row: &str, keep_logs: Option<u32>) -> Result<u64> {
        let call = wire::add_log(self.keys(), job_id, row, keep_logs);
        let refusal = Refusal::new("addLog", job_id);
        let count = self
            .run_checked(call, &scripts::ADD_LOG, "add a job log", refusal)
            .await?;
        Ok(count.unsigned_abs())
    }

    async fn clear_logs(&self, job_id: &JobId, keep_logs: Option<u32>) -> Result<()> {
        let key = self.logs_key(job_id);
        let mut con = self.connection();
        match keep_logs.filter(|n| *n > 0) {
            Some(keep) => {
                redis::cmd("LTRIM")
                    .arg(&key)
                    .arg(-i64::from(keep))
                    .arg(-1)
                    .query_async::<()>(&mut con)
                    .await
                    .map_err(wrap("trim job logs"))?;
            }
            None => {
                con.del::<_, ()>(&key)
                    .await
                    .map_err(wrap("clear job logs"))?;
            }
        }
        Ok(())
    }

    async fn change_delay(&self, job_id: &JobId, delay: Duration) -> Result<()> {
        let call = wire::change_delay(self.keys(), job_id, delay, self.now_ms());
        let refusal = Refusal {
            state: Some("delayed"),
            ..Refusal::new("changeDelay", job_id)
        };
        self.run_checked(
            call,
            &scripts::CHANGE_DELAY,
            "change a job's delay",
            refusal,
        )
        .await?;
        Ok(())
    }

    async fn change_priority(&self, job_id: &JobId, priority: u32, lifo: bool) -> Result<()> {
        let call = wire::change_priority(self.keys(), job_id, priority, lifo);
        let refusal = Refusal::new("changePriority", job_id);
        self.run_checked(
            call,
            &scripts::CHANGE_PRIORITY,
            "change a job's priority",
            refusal,
        )
        .await?;
        Ok(())
    }

    async fn remove(&self, job_id: &JobId, remove_children: bool) -> Result<bool> {
        let call = wire::remove_job(self.keys(), job_id, remove_children);
        let refusal = Refusal::new("removeJob", job_id);
        let removed = self
            .run_checked(call, &scripts::REMOVE_JOB, "remove a job", refusal)
            .await?;
        Ok(removed == 1)
    }

    async fn remove_unprocessed_children(&self, job_id: &JobId) -> Result<()> {
        wire::remove_unprocessed_children(self.keys(), job_id)
            .invoke(&self.connection(), &scripts::REMOVE_UNPROCESSED_CHILDREN)
            .await
            .map_err(wrap("remove unprocessed children"))?;
        Ok(())
    }

    async fn remove_child_dependency(&self, job_id: &JobId, parent_key: &str) -> Result<bool> {
        let call = wire::remove_child_dependency(self.keys(), job_id, parent_key);
        let refusal = Refusal {
            parent_key: Some(parent_key),
            ..Refusal::new("removeChildDependency", job_id)
        };
        let context = "remove a child dependency";
        // 0: detached; 1: the child was not attached to that parent.
        let code = self
            .run_checked(call, &scripts::REMOVE_CHILD_DEPENDENCY, context, refusal)
            .await?;
        Ok(code == 0)
    }

    async fn remove_deduplication_key(
        &self,
        deduplication_id: &str,
        job_id: &JobId,
    ) -> Result<bool> {
        let reply = wire::remove_deduplication_key(self.keys(), deduplication_id, job_id)
            .invoke(&self.connection(), &scripts::REMOVE_DEDUPLICATION_KEY)
            .await
            .map_err(wrap("remove a deduplication key"))?;
        Ok(reply::expect_int("remove a deduplication key", &reply)? > 0)
    }

    async fn delete_deduplication_key(&self, deduplication_id: &str) -> Result<bool> {
        let removed: u64 = self
            .connection()
            .del(self.keys().deduplication(deduplication_id))
            .await
            .map_err(wrap("delete a deduplication key"))?;
        Ok(removed > 0)
    }
}
