//! What the server is and how it is set up, read from `INFO` when a backend connects, as
//! Node.js's `RedisConnection` reads it: the version (refused below 5.0.0, warned about below
//! 6.2.0), the kind of server (Redis, Valkey, Dragonfly) and the eviction policy, warned about
//! unless it is `noeviction`: a server that evicts keys under memory pressure silently drops
//! jobs, locks and markers.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::wrap;

/// Set once the warning that `INFO` is not permitted was given (once per process).
static INFO_DENIED_WARNED: AtomicBool = AtomicBool::new(false);

/// The oldest Redis the scripts run on (upstream's `RedisConnection.minimumVersion`).
pub const MINIMUM_REDIS_VERSION: (u32, u32, u32) = (5, 0, 0);

/// The oldest Redis that runs without a warning (upstream's `recommendedMinimumVersion`).
pub const RECOMMENDED_REDIS_VERSION: (u32, u32, u32) = (6, 2, 0);

/// Which server answers: Valkey and Dragonfly report a `redis_version` too, but theirs is not
/// the version their features follow, so version checks apply to Redis only (as upstream's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseType {
    /// Redis.
    Redis,
    /// Valkey.
    Valkey,
    /// Dragonfly.
    Dragonfly,
}

/// The server a backend connected to, as its `INFO` described it.
///
/// ```
/// use bullmq_redis::{DatabaseType, ServerInfo};
///
/// let info = ServerInfo::from_info("# Server\r\nredis_version:7.2.4\r\n# Memory\r\nmaxmemory_policy:allkeys-lru\r\n");
/// assert_eq!(info.version, "7.2.4");
/// assert_eq!(info.database_type, DatabaseType::Redis);
/// assert!(!info.keeps_every_key());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The version as reported (`redis_version`, or Valkey's and Dragonfly's own).
    pub version: String,
    /// Which server it is.
    pub database_type: DatabaseType,
    /// `maxmemory_policy`, when the server reports one.
    pub eviction_policy: Option<String>,
}

impl ServerInfo {
    /// Reads the reply of `INFO`, line by line as upstream does; a server that reports no
    /// version counts as the oldest supported one, as upstream's fallback does.
    #[must_use]
    pub fn from_info(info: &str) -> Self {
        let mut version = None;
        let mut database_type = DatabaseType::Redis;
        let mut eviction_policy = None;
        for line in info.lines() {
            if line.contains("dragonfly_version:") || line.contains("server:Dragonfly") {
                database_type = DatabaseType::Dragonfly;
                if let Some(v) = line.strip_prefix("dragonfly_version:") {
                    version = Some(v);
                }
            } else if line.contains("valkey_version:") || line.contains("server:Valkey") {
                database_type = DatabaseType::Valkey;
                if let Some(v) = line.strip_prefix("valkey_version:") {
                    version = Some(v);
                }
            } else if let Some(v) = line.strip_prefix("redis_version:") {
                version = Some(v);
            }
            if let Some(policy) = line.strip_prefix("maxmemory_policy:") {
                eviction_policy = Some(policy.trim().to_owned());
            }
        }
        let version = version
            .or_else(|| {
                info.lines()
                    .find(|l| l.contains("version:"))
                    .and_then(|l| l.split(':').nth(1))
            })
            .map_or_else(|| dotted(MINIMUM_REDIS_VERSION), |v| v.trim().to_owned());
        Self {
            version,
            database_type,
            eviction_policy,
        }
    }

    /// Reads the server with `INFO`; where the user may not run it (`INFO` is in ACL's
    /// `@dangerous`, which least-privilege users lack), with `HELLO` instead, which tells the
    /// version and kind but not the eviction policy: that is then not checked, with one
    /// warning per process.
    pub(crate) async fn read(
        con: &mut impl redis::aio::ConnectionLike,
    ) -> bullmq_core::Result<Self> {
        let what = "read the server's version and settings";
        match redis::cmd("INFO").query_async::<String>(con).await {
            Ok(info) => Ok(Self::from_info(&info)),
            Err(e) if e.code() == Some("NOPERM") => {
                let hello: redis::Value = redis::cmd("HELLO")
                    .query_async(con)
                    .await
                    .map_err(wrap(what))?;
                if !INFO_DENIED_WARNED.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "bullmq: this Redis user may not run INFO: the server version was read \
                         from HELLO, and the eviction policy (it must be noeviction) cannot be \
                         checked"
                    );
                }
                Ok(Self::from_hello(&hello))
            }
            Err(e) => Err(wrap(what)(e)),
        }
    }

    /// Reads the reply of `HELLO` (no arguments: the protocol stays as it is): its `server`
    /// and `version` fields; no eviction policy.
    #[must_use]
    pub fn from_hello(reply: &redis::Value) -> Self {
        let mut server = None;
        let mut version = None;
        let text = |v: &redis::Value| match v {
            redis::Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
            redis::Value::SimpleString(s) | redis::Value::VerbatimString { text: s, .. } => {
                Some(s.clone())
            }
            _ => None,
        };
        let mut field = |key: &redis::Value, value: &redis::Value| match text(key).as_deref() {
            Some("server") => server = text(value),
            Some("version") => version = text(value),
            _ => {}
        };
        match reply {
            redis::Value::Array(items) => {
                for pair in items.chunks_exact(2) {
                    field(&pair[0], &pair[1]);
                }
            }
            redis::Value::Map(pairs) => {
                for (key, value) in pairs {
                    field(key, value);
                }
            }
            _ => {}
        }
        let database_type = match server.as_deref().map(str::to_ascii_lowercase).as_deref() {
            Some("valkey") => DatabaseType::Valkey,
            Some("dragonfly") => DatabaseType::Dragonfly,
            _ => DatabaseType::Redis,
        };
        Self {
            version: version.unwrap_or_else(|| dotted(MINIMUM_REDIS_VERSION)),
            database_type,
            eviction_policy: None,
        }
    }

    /// The version as `(major, minor, patch)`, missing or unreadable parts as 0 (like
    /// semver's `coerce`).
    #[must_use]
    pub fn version_triple(&self) -> (u32, u32, u32) {
        parse_version(&self.version)
    }

    /// Whether this is Redis older than `version` (other servers never are, as upstream
    /// decides).
    #[must_use]
    pub fn is_redis_older_than(&self, version: (u32, u32, u32)) -> bool {
        self.database_type == DatabaseType::Redis && self.version_triple() < version
    }

    /// Whether the server never evicts keys (`noeviction`, or no policy reported): what a
    /// queue needs, since an evicted key is a lost job.
    #[must_use]
    pub fn keeps_every_key(&self) -> bool {
        self.eviction_policy
            .as_deref()
            .is_none_or(|policy| policy == "noeviction")
    }

    /// Refuses a Redis older than [`MINIMUM_REDIS_VERSION`]; warns (through `tracing`) below
    /// [`RECOMMENDED_REDIS_VERSION`] and when the server may evict keys, with upstream's words.
    pub(crate) fn check(&self) -> Result<(), UnsupportedRedisVersion> {
        if self.is_redis_older_than(MINIMUM_REDIS_VERSION) {
            return Err(UnsupportedRedisVersion {
                version: self.version.clone(),
            });
        }
        if self.is_redis_older_than(RECOMMENDED_REDIS_VERSION) {
            tracing::warn!(
                "It is highly recommended to use a minimum Redis version of {} (current: {})",
                dotted(RECOMMENDED_REDIS_VERSION),
                self.version
            );
        }
        if let Some(policy) = self
            .eviction_policy
            .as_deref()
            .filter(|_| !self.keeps_every_key())
        {
            tracing::warn!("IMPORTANT! Eviction policy is {policy}. It should be \"noeviction\"");
        }
        Ok(())
    }
}

/// A Redis older than [`MINIMUM_REDIS_VERSION`], refused when the backend connects; reach it
/// through `bullmq_core::Error::Backend(err)` and `err.downcast_ref::<UnsupportedRedisVersion>()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedRedisVersion {
    /// The version the server reported.
    pub version: String,
}

impl fmt::Display for UnsupportedRedisVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Redis version needs to be greater or equal than {} (current: {}); \
             set RedisOptions::skip_version_check to connect anyway",
            dotted(MINIMUM_REDIS_VERSION),
            self.version
        )
    }
}

impl std::error::Error for UnsupportedRedisVersion {}

impl bullmq_core::BackendError for UnsupportedRedisVersion {
    fn kind(&self) -> bullmq_core::BackendErrorKind {
        bullmq_core::BackendErrorKind::Server
    }
}

/// `major.minor.patch`, missing or unreadable parts as 0 (like semver's `coerce`).
pub(crate) fn parse_version(text: &str) -> (u32, u32, u32) {
    let mut parts = text.trim().split('.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap_or(0)
    });
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

fn dotted((major, minor, patch): (u32, u32, u32)) -> String {
    format!("{major}.{minor}.{patch}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redis(version: &str) -> ServerInfo {
        ServerInfo::from_info(&format!("# Server\r\nredis_version:{version}\r\n"))
    }

    #[test]
    fn a_redis_older_than_5_is_refused_and_newer_ones_are_not() {
        let err = redis("4.0.14").check().expect_err("4.0.14 is too old");
        assert_eq!(err.version, "4.0.14");
        assert!(err.to_string().contains("5.0.0"), "{err}");
        for ok in ["5.0.0", "6.0.20", "7.2.4"] {
            assert!(redis(ok).check().is_ok(), "{ok}");
        }
    }

    #[test]
    fn other_servers_are_not_held_to_redis_versions() {
        let valkey = ServerInfo::from_info("redis_version:4.0.0\r\nvalkey_version:8.0.1\r\n");
        assert_eq!(valkey.database_type, DatabaseType::Valkey);
        assert_eq!(valkey.version, "8.0.1");
        assert!(valkey.check().is_ok());
        let dragonfly =
            ServerInfo::from_info("redis_version:6.2.11\r\ndragonfly_version:df-v1.14.1\r\n");
        assert_eq!(dragonfly.database_type, DatabaseType::Dragonfly);
        assert!(!dragonfly.is_redis_older_than((99, 0, 0)));
    }

    #[test]
    fn eviction_policy_is_read_from_the_memory_section() {
        let info = |policy: &str| {
            ServerInfo::from_info(&format!(
                "# Server\r\nredis_version:7.0.15\r\n\r\n# Memory\r\nmaxmemory_policy:{policy}\r\n"
            ))
        };
        assert!(info("noeviction").keeps_every_key());
        assert!(!info("allkeys-lru").keeps_every_key());
        assert_eq!(
            info("volatile-ttl").eviction_policy.as_deref(),
            Some("volatile-ttl")
        );
        assert!(redis("7.0.0").keeps_every_key(), "no policy reported");
    }

    #[test]
    fn hello_tells_the_version_and_kind() {
        let bulk = |s: &str| redis::Value::BulkString(s.as_bytes().to_vec());
        let reply = redis::Value::Array(vec![
            bulk("server"),
            bulk("valkey"),
            bulk("version"),
            bulk("8.0.1"),
            bulk("proto"),
            redis::Value::Int(2),
        ]);
        let info = ServerInfo::from_hello(&reply);
        assert_eq!(info.version, "8.0.1");
        assert_eq!(info.database_type, DatabaseType::Valkey);
        assert!(info.keeps_every_key(), "no policy known");
    }

    #[test]
    fn versions_are_coerced_like_semver() {
        assert_eq!(parse_version("7.0"), (7, 0, 0));
        assert_eq!(parse_version("7.2.4-rc1"), (7, 2, 4));
        assert_eq!(ServerInfo::from_info("").version, "5.0.0");
    }
}
