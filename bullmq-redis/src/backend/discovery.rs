//! Finding the queues under a prefix: every `<prefix>:<queue>:meta` hash, which each runtime
//! writes when a queue is first used.

use std::collections::BTreeSet;

use bullmq_core::{QueueName, Result};

use super::RedisBackend;

/// Keys asked for per `SCAN` round: a hint, so one round stays short on a large keyspace.
const SCAN_COUNT: u32 = 1000;

/// `text` with the glob characters `SCAN MATCH` reads escaped.
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

/// The queue a scanned key names, or `None` when it is not `<prefix>:<queue>:meta` for a
/// valid queue name (a queue name has no `:`, so a job's own keys never match).
fn queue_of(key: &str, prefix: &str) -> Option<QueueName> {
    let rest = key.strip_prefix(prefix)?.strip_prefix(':')?;
    let name = rest.strip_suffix(":meta")?;
    QueueName::new(name).ok()
}

impl RedisBackend {
    /// Every queue under this backend's prefix, sorted by name: the queues whose `meta` hash
    /// exists (`SCAN MATCH <prefix>:*:meta`).
    ///
    /// The scan visits the whole keyspace in rounds, so it costs O(keys) on the server: call
    /// it to discover queues, not on every request. On a Redis Cluster it scans the node
    /// that serves this backend's queue only.
    ///
    /// ```no_run
    /// # async fn run() -> bullmq_core::Result<()> {
    /// use bullmq_core::QueueName;
    /// use bullmq_redis::{RedisBackend, RedisOptions};
    ///
    /// let options = RedisOptions::new("redis://127.0.0.1:6379");
    /// let backend = RedisBackend::connect(&options, QueueName::new("any")?).await?;
    /// for queue in backend.queue_names().await? {
    ///     println!("{queue}");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// The server's refusal or a lost connection.
    pub async fn queue_names(&self) -> Result<Vec<QueueName>> {
        let prefix = self.prefix().as_str();
        let pattern = format!("{}:*:meta", glob_escape(prefix));
        let mut cursor = 0_u64;
        let mut found = BTreeSet::new();
        loop {
            let (next, keys) = self
                .scan_round(cursor, &pattern, SCAN_COUNT, "scan for queues")
                .await?;
            found.extend(keys.iter().filter_map(|key| queue_of(key, prefix)));
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        Ok(found.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_meta_keys_of_valid_queue_names_are_queues() {
        assert_eq!(
            queue_of("bull:emails:meta", "bull").map(|q| q.as_str().to_owned()),
            Some("emails".to_owned())
        );
        assert!(queue_of("bull:emails:1:meta", "bull").is_none());
        assert!(queue_of("bullx:emails:meta", "bull").is_none());
        assert!(queue_of("bull:emails:wait", "bull").is_none());
        assert!(queue_of("bull::meta", "bull").is_none());
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
