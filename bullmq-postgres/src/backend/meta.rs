//! `QueueMeta` for PostgreSQL: upstream's `set_queue_meta`, `get_queue_meta_field`,
//! `get_queue_meta_fields`, `get_queue_meta`, `remove_queue_meta_fields` and
//! `has_queue_meta_field` commands on the `meta` table, as Node.js's `PostgresQueueBackend`
//! runs them.

use bullmq_core::Result;
use bullmq_core::backend::QueueMeta;
use sqlx::Row as _;

use super::{PostgresBackend, sql_error};
use crate::sql::commands;
use crate::wire;

impl QueueMeta for PostgresBackend {
    /// Upserts the fields; answers the rows written, as Node.js does (every field, new or
    /// not). Nothing to set runs no command.
    async fn set_queue_meta(&self, values: &[(&str, String)]) -> Result<u64> {
        // A field given twice would make the upsert touch its row twice, which PostgreSQL
        // refuses; the last value wins, as with Redis's HSET.
        let mut fields: Vec<&str> = Vec::with_capacity(values.len());
        let mut vals: Vec<&str> = Vec::with_capacity(values.len());
        for (field, value) in values {
            match fields.iter().position(|f| f == field) {
                Some(i) => vals[i] = value,
                None => {
                    fields.push(field);
                    vals.push(value);
                }
            }
        }
        if fields.is_empty() {
            return Ok(0);
        }
        let query = wire::queued(commands::SET_QUEUE_META, self.queue_name())
            .bind(&fields)
            .bind(&vals);
        self.execute(query, "setQueueMeta").await
    }

    async fn get_queue_meta_field(&self, field: &str) -> Result<Option<String>> {
        const COMMAND: &str = "getQueueMetaField";
        let rows = self
            .keyed_rows(commands::GET_QUEUE_META_FIELD, field, COMMAND)
            .await?;
        match rows.first() {
            Some(row) => row.try_get("value").map_err(sql_error(COMMAND)),
            None => Ok(None),
        }
    }

    /// One answer per field asked, in the order asked.
    async fn get_queue_meta_fields(&self, fields: &[&str]) -> Result<Vec<Option<String>>> {
        const COMMAND: &str = "getQueueMetaFields";
        if fields.is_empty() {
            return Ok(Vec::new());
        }
        let query = wire::queued(commands::GET_QUEUE_META_FIELDS, self.queue_name()).bind(fields);
        let rows = self.rows(query, COMMAND).await?;
        let found = pairs(&rows, COMMAND)?;
        Ok(fields
            .iter()
            .map(|f| {
                found
                    .iter()
                    .find(|(field, _)| field == f)
                    .map(|(_, value)| value.clone())
            })
            .collect())
    }

    async fn get_queue_meta(&self) -> Result<Vec<(String, String)>> {
        const COMMAND: &str = "getQueueMeta";
        let rows = self.queue_rows(commands::GET_QUEUE_META, COMMAND).await?;
        pairs(&rows, COMMAND)
    }

    /// Answers how many of the fields existed (the rows deleted).
    async fn remove_queue_meta_fields(&self, fields: &[&str]) -> Result<u64> {
        if fields.is_empty() {
            return Ok(0);
        }
        let query =
            wire::queued(commands::REMOVE_QUEUE_META_FIELDS, self.queue_name()).bind(fields);
        self.execute(query, "removeQueueMetaFields").await
    }

    async fn has_queue_meta_field(&self, field: &str) -> Result<bool> {
        self.keyed_exists(commands::HAS_QUEUE_META_FIELD, field, "hasQueueMetaField")
            .await
    }
}

/// `(field, value)` rows.
fn pairs(rows: &[sqlx::postgres::PgRow], command: &'static str) -> Result<Vec<(String, String)>> {
    rows.iter()
        .map(|row| {
            let field: String = row.try_get("field").map_err(sql_error(command))?;
            let value: String = row.try_get("value").map_err(sql_error(command))?;
            Ok((field, value))
        })
        .collect()
}
