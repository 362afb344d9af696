//! Whether the command connection is up, as its calls show it, logged through
//! [`ConnectionLog`]: which outcomes of a Redis call show it lost, which show it working.

use bullmq_core::telemetry::ConnectionLog;
use redis::RedisError;

/// Notes how a call ended on `log`.
pub(super) fn observe<T>(log: &ConnectionLog, result: &Result<T, RedisError>) {
    match result {
        Err(e) if is_connection_failure(e) => log.lost(e),
        Ok(_) => log.up(),
        Err(_) => {}
    }
}

/// A failure of the connection (refused, dropped, timed out), not a refusal by the server.
pub(super) fn is_connection_failure(e: &RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal()
}
