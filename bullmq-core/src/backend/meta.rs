//! The queue's meta hash: pause flag, global concurrency and rate limit, version.

use std::future::Future;

use crate::Result;

/// Queue meta (upstream: `setQueueMeta`, `getQueueMetaField`, `getQueueMetaFields`,
/// `getQueueMeta`, `removeQueueMetaFields`, `hasQueueMetaField`).
pub trait QueueMeta: Send + Sync {
    /// Sets fields; returns how many were new.
    fn set_queue_meta(&self, values: &[(&str, String)])
    -> impl Future<Output = Result<u64>> + Send;

    /// Reads one field.
    fn get_queue_meta_field(
        &self,
        field: &str,
    ) -> impl Future<Output = Result<Option<String>>> + Send;

    /// Reads several fields, in the order asked.
    fn get_queue_meta_fields(
        &self,
        fields: &[&str],
    ) -> impl Future<Output = Result<Vec<Option<String>>>> + Send;

    /// Reads every field.
    fn get_queue_meta(&self) -> impl Future<Output = Result<Vec<(String, String)>>> + Send;

    /// Removes fields; returns how many existed.
    fn remove_queue_meta_fields(&self, fields: &[&str])
    -> impl Future<Output = Result<u64>> + Send;

    /// True when the field exists.
    fn has_queue_meta_field(&self, field: &str) -> impl Future<Output = Result<bool>> + Send;
}
