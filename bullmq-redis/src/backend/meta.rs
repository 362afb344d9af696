//! `QueueMeta` for Redis: plain hash commands on `<prefix>:<queue>:meta`, as Node.js issues them.

use bullmq_core::Result;
use bullmq_core::backend::QueueMeta;
use redis::Value;

use super::RedisBackend;
use crate::reply;

impl RedisBackend {
    /// `verb <prefix>:<queue>:meta fields…`; `what` names the operation in the error.
    async fn on_meta(&self, verb: &str, fields: &[&str], what: &'static str) -> Result<Value> {
        let mut cmd = redis::cmd(verb);
        cmd.arg(&self.keys().meta).arg(fields);
        self.query(&cmd, what).await
    }
}

impl QueueMeta for RedisBackend {
    /// `HSET`; nothing to set is no command (Redis would refuse an `HSET` without fields).
    async fn set_queue_meta(&self, values: &[(&str, String)]) -> Result<u64> {
        if values.is_empty() {
            return Ok(0);
        }
        let mut cmd = redis::cmd("HSET");
        cmd.arg(&self.keys().meta);
        for (field, value) in values {
            cmd.arg(*field).arg(value);
        }
        let added = self.query(&cmd, "set queue meta").await?;
        Ok(reply::count(&added))
    }

    async fn get_queue_meta_field(&self, field: &str) -> Result<Option<String>> {
        let value = self
            .on_meta("HGET", &[field], "read a queue meta field")
            .await?;
        Ok(reply::text(&value))
    }

    /// `HMGET`, one answer per field asked.
    async fn get_queue_meta_fields(&self, fields: &[&str]) -> Result<Vec<Option<String>>> {
        if fields.is_empty() {
            return Ok(Vec::new());
        }
        let values = self
            .on_meta("HMGET", fields, "read queue meta fields")
            .await?;
        Ok(reply::items(&values).iter().map(reply::text).collect())
    }

    async fn get_queue_meta(&self) -> Result<Vec<(String, String)>> {
        let all = self.on_meta("HGETALL", &[], "read the queue meta").await?;
        Ok(reply::text_pairs(&all))
    }

    async fn remove_queue_meta_fields(&self, fields: &[&str]) -> Result<u64> {
        if fields.is_empty() {
            return Ok(0);
        }
        let removed = self
            .on_meta("HDEL", fields, "remove queue meta fields")
            .await?;
        Ok(reply::count(&removed))
    }

    async fn has_queue_meta_field(&self, field: &str) -> Result<bool> {
        let exists = self
            .on_meta("HEXISTS", &[field], "check a queue meta field")
            .await?;
        Ok(reply::count(&exists) == 1)
    }
}
