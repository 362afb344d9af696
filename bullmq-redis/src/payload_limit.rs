//! The largest argument the server takes (`proto-max-bulk-len`), so that a job over it is
//! refused before it is sent. Sent anyway, Redis answers "invalid bulk length" and closes the
//! connection, which fails every call in flight on it with a lost connection: retried, the
//! jobs of a bulk written before it would be added twice.

use redis::Value;
use tokio::sync::OnceCell;

use crate::connection::SharedConnection;
use crate::error::wrap;

/// Redis's default `proto-max-bulk-len`, taken when the server will not say (`CONFIG` not
/// permitted to the user, renamed or disabled).
pub(crate) const DEFAULT_PROTO_MAX_BULK_LEN: u64 = 512 * 1024 * 1024;

/// The smallest `proto-max-bulk-len` a server accepts (1 MB): a job whose every argument
/// is within it fits any server, so the limit is only asked for when a job is larger, and
/// the usual add costs no round trip and no command an ACL must allow.
pub(crate) const MIN_PROTO_MAX_BULK_LEN: u64 = 1024 * 1024;

/// The server setting the limit comes from, as errors name it.
pub(crate) const SETTING: &str = "proto-max-bulk-len";

/// The server's limit, read with `CONFIG GET` the first time a job has an argument over 1 MB,
/// and kept for the backend, its clones and its siblings.
#[derive(Debug, Default)]
pub(crate) struct PayloadLimit(OnceCell<u64>);

impl PayloadLimit {
    /// The limit in bytes to check an argument of `largest` bytes against: the server's
    /// when `largest` is over the smallest limit a server can have (asked once and kept; a
    /// refused `CONFIG GET` gives the default, a lost connection is an error and the next
    /// call asks again), else that smallest limit, which `largest` cannot exceed.
    pub(crate) async fn for_largest(
        &self,
        con: &SharedConnection,
        largest: usize,
    ) -> bullmq_core::Result<u64> {
        if u64::try_from(largest).unwrap_or(u64::MAX) <= MIN_PROTO_MAX_BULK_LEN {
            return Ok(MIN_PROTO_MAX_BULK_LEN);
        }
        self.0.get_or_try_init(|| read(con)).await.copied()
    }
}

async fn read(con: &SharedConnection) -> bullmq_core::Result<u64> {
    let reply = redis::cmd("CONFIG")
        .arg("GET")
        .arg(SETTING)
        .query_async::<Value>(&mut con.clone())
        .await;
    match reply {
        Ok(value) => Ok(parse(&value).unwrap_or(DEFAULT_PROTO_MAX_BULK_LEN)),
        Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
            Err(wrap("read the server's proto-max-bulk-len")(e))
        }
        Err(e) => {
            tracing::debug!(
                error = %e,
                "bullmq: CONFIG GET proto-max-bulk-len refused; jobs are checked against \
                 Redis's default of 512 MB"
            );
            Ok(DEFAULT_PROTO_MAX_BULK_LEN)
        }
    }
}

/// The value of a `CONFIG GET` reply for one setting: `[name, value]` (RESP2) or
/// `{name: value}` (RESP3). `None` when the server does not know the setting.
fn parse(reply: &Value) -> Option<u64> {
    let value = match reply {
        Value::Array(items) => items.get(1)?,
        Value::Map(pairs) => &pairs.first()?.1,
        _ => return None,
    };
    let text = match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?,
        Value::SimpleString(s) => s.as_str(),
        Value::Int(n) => return u64::try_from(*n).ok(),
        _ => return None,
    };
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn reads_both_reply_shapes() {
        let resp2 = Value::Array(vec![bulk(SETTING), bulk("1048576")]);
        assert_eq!(parse(&resp2), Some(1_048_576));
        let resp3 = Value::Map(vec![(bulk(SETTING), bulk("536870912"))]);
        assert_eq!(parse(&resp3), Some(DEFAULT_PROTO_MAX_BULK_LEN));
        assert_eq!(parse(&Value::Array(vec![])), None, "an unknown setting");
        assert_eq!(parse(&Value::Array(vec![bulk(SETTING), bulk("x")])), None);
    }
}
