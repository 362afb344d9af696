//! `QueueMeta` for Redis: plain hash commands on `<prefix>:<queue>:meta`, as Node.js issues them.

use bullmq_core::Result;
use bullmq_core::backend::QueueMeta;
use redis::Value;

use super::RedisBackend;
use crate::error::wrap;
use crate::reply;

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
        let added: Value = cmd
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("set queue meta"))?;
        Ok(reply::count(&added))
    }

    async fn get_queue_meta_field(&self, field: &str) -> Result<Option<String>> {
        let value: Value = redis::cmd("HGET")
            .arg(&self.keys().meta)
            .arg(field)
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("read a queue meta field"))?;
        Ok(reply::text(&value))
    }

    /// `HMGET`, one answer per field asked.
    async fn get_queue_meta_fields(&self, fields: &[&str]) -> Result<Vec<Option<String>>> {
        if fields.is_empty() {
            return Ok(Vec::new());
        }
        let values: Value = redis::cmd("HMGET")
            .arg(&self.keys().meta)
            .arg(fields)
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("read queue meta fields"))?;
        Ok(reply::items(&values).iter().map(reply::text).collect())
    }

    async fn get_queue_meta(&self) -> Result<Vec<(String, String)>> {
        let all: Value = redis::cmd("HGETALL")
            .arg(&self.keys().meta)
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("read the queue meta"))?;
        Ok(reply::text_pairs(&all))
    }

    async fn remove_queue_meta_fields(&self, fields: &[&str]) -> Result<u64> {
        if fields.is_empty() {
            return Ok(0);
        }
        let removed: Value = redis::cmd("HDEL")
            .arg(&self.keys().meta)
            .arg(fields)
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("remove queue meta fields"))?;
        Ok(reply::count(&removed))
    }

    async fn has_queue_meta_field(&self, field: &str) -> Result<bool> {
        let exists: Value = redis::cmd("HEXISTS")
            .arg(&self.keys().meta)
            .arg(field)
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("check a queue meta field"))?;
        Ok(reply::count(&exists) == 1)
    }
}
