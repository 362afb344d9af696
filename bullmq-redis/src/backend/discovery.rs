//! Finding the queues under a prefix: every `<prefix>:<queue>:meta` key, by `SCAN`.

use std::collections::BTreeSet;

use bullmq_core::{QueueName, Result};
use redis::Value;

use super::RedisBackend;
use crate::error::wrap;
use crate::reply;

/// Keys `SCAN` is asked to look at per call: large enough to be quick, small enough that one
/// call never holds the server for long.
const SCAN_COUNT: u64 = 1000;

/// `text` with Redis glob metacharacters escaped, so a prefix matches only itself.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The queue a `<prefix>:<queue>:meta` key names, if it is one (a name that is not a valid
/// queue name, written by some other tool, is skipped).
fn queue_of(key: &str, prefix: &str) -> Option<QueueName> {
    let rest = key.strip_prefix(prefix)?.strip_prefix(':')?;
    let name = rest.strip_suffix(":meta")?;
    QueueName::new(name).ok()
}

impl RedisBackend {
    /// The names of every queue under this backend's prefix, sorted: the queues whose `meta`
    /// hash exists (every runtime writes it when a `Queue` first writes to its queue).
    ///
    /// It is a bounded, incremental scan (`SCAN <cursor> MATCH <prefix>:*:meta COUNT 1000`,
    /// repeated until the cursor comes back to 0): no call blocks the server for long, but
    /// the whole keyspace is walked, so it takes longer on a large database, and a queue
    /// created or removed meanwhile may or may not be listed. On a Redis Cluster it scans
    /// the node that serves this backend's queue, which holds every queue of a hash-tagged
    /// prefix (such as `{bull}`).
    ///
    /// ```no_run
    /// # async fn run() -> bullmq_core::Result<()> {
    /// use bullmq_core::QueueName;
    /// use bullmq_redis::{RedisBackend, RedisOptions};
    ///
    /// let any = QueueName::new("any")?;
    /// let backend = RedisBackend::connect(&RedisOptions::new("redis://127.0.0.1:6379"), any).await?;
    /// for queue in backend.queue_names().await? {
    ///     println!("{queue}");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// A connection failure or a refused `SCAN` (an ACL user without `@keyspace`).
    pub async fn queue_names(&self) -> Result<Vec<QueueName>> {
        let prefix = self.prefix().as_str();
        let pattern = format!("{}:*:meta", glob_escape(prefix));
        let mut names = BTreeSet::new();
        let mut cursor = 0_u64;
        loop {
            let reply: Value = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(SCAN_COUNT)
                .query_async(&mut self.connection())
                .await
                .map_err(wrap("scan for queues"))?;
            let parts = reply::items(&reply);
            let next = parts
                .first()
                .and_then(reply::text)
                .and_then(|c| c.parse::<u64>().ok())
                .unwrap_or(0);
            if let Some(keys) = parts.get(1) {
                names.extend(
                    reply::text_items(keys)
                        .iter()
                        .filter_map(|key| queue_of(key, prefix)),
                );
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        Ok(names.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_meta_keys_of_the_prefix_name_queues() {
        let q = |k: &str| queue_of(k, "bull").map(|n| n.as_str().to_owned());
        assert_eq!(q("bull:mail:meta").as_deref(), Some("mail"));
        assert_eq!(q("bull:mail:events"), None);
        assert_eq!(q("bullx:mail:meta"), None);
        assert_eq!(q("bull:a:b:meta"), None);
        assert_eq!(q("bull::meta"), None);
        assert_eq!(glob_escape("{b*}[x]"), "{b\\*}\\[x\\]");
    }
}
