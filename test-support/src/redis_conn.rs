//! The shared test Redis: a connection, key clean-up under a test's prefix, and what its
//! clients are doing (`CLIENT LIST`).

use std::time::Duration;

use crate::{eventually, redis_url};

/// A connection to the test Redis, or a panic that says how to get one.
pub async fn redis() -> redis::aio::MultiplexedConnection {
    let url = redis_url();
    let client = redis::Client::open(url.as_str())
        .unwrap_or_else(|e| panic!("REDIS_URL {url:?} is not a valid Redis URL: {e}"));
    client
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "cannot reach Redis at {url} ({e}). Start one (`redis-server --port 6379`) \
                 or point REDIS_URL at a server you may write to."
            )
        })
}

/// Deletes every key under `prefix` (`<prefix>:*`) on the test Redis; errors are ignored
/// (clean-up must not hide the test's own failure).
pub fn delete_prefix(prefix: &str) {
    let Ok(client) = redis::Client::open(redis_url().as_str()) else {
        return;
    };
    let Ok(mut con) = client.get_connection() else {
        return;
    };
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query(&mut con)
        .unwrap_or_default();
    for chunk in keys.chunks(500) {
        let _: redis::RedisResult<()> = redis::cmd("DEL").arg(chunk).query(&mut con);
    }
}

/// Deletes every key under its prefix when dropped, so a test cleans up even when it fails.
pub struct PrefixGuard(pub String);

impl PrefixGuard {
    /// A guard for a fresh [`unique_prefix`](crate::unique_prefix).
    pub fn new() -> Self {
        Self(crate::unique_prefix())
    }

    /// The prefix.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for PrefixGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for PrefixGuard {
    fn drop(&mut self) {
        delete_prefix(&self.0);
    }
}

/// The `CLIENT LIST` lines of the test Redis's clients named `name`.
pub async fn clients_named(name: &str) -> Vec<String> {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut redis().await)
        .await
        .expect("CLIENT LIST");
    let wanted = format!(" name={name} ");
    list.lines()
        .filter(|l| l.contains(&wanted))
        .map(str::to_owned)
        .collect()
}

/// Waits (up to 10 s) until a client of the test Redis named `name` is blocked in `command`
/// (lower case, e.g. `bzpopmin`, `xread`): the moment a blocking reader is really listening.
pub async fn blocked_in(name: &str, command: &str) {
    let wanted = format!(" cmd={command}");
    eventually(
        &format!("{name} blocks in {command}"),
        Duration::from_secs(10),
        || async {
            clients_named(name)
                .await
                .iter()
                .any(|l| l.contains(&wanted))
        },
    )
    .await;
}
