//! Redis failures as bullmq errors.

use std::fmt;

use bullmq_core::{BackendError, BackendErrorKind};

/// A failure of the Redis client or server; reach it through
/// `bullmq_core::Error::Backend(err)` and `err.downcast_ref::<RedisError>()`.
#[derive(Debug)]
pub struct RedisError {
    /// What bullmq was doing.
    pub context: &'static str,
    /// The client's error.
    pub source: redis::RedisError,
}

impl fmt::Display for RedisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "redis: {}: {}", self.context, self.source)
    }
}

impl std::error::Error for RedisError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl BackendError for RedisError {
    fn kind(&self) -> BackendErrorKind {
        let e = &self.source;
        if e.is_timeout() {
            BackendErrorKind::Timeout
        } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
            BackendErrorKind::Connection
        } else if matches!(
            e.kind(),
            redis::ErrorKind::Server(_)
                | redis::ErrorKind::Extension
                | redis::ErrorKind::AuthenticationFailed
        ) {
            // A refused password is the server's answer, not a lost connection: retrying it
            // would only repeat the refusal. `Extension` is an error reply whose code the
            // client does not list (`WRONGPASS`, `NOPERM`, …).
            BackendErrorKind::Server
        } else if matches!(
            e.kind(),
            redis::ErrorKind::Parse | redis::ErrorKind::UnexpectedReturnType
        ) {
            BackendErrorKind::Protocol
        } else {
            BackendErrorKind::Other
        }
    }
}

/// Wraps a client error with what bullmq was doing.
pub(crate) fn wrap(context: &'static str) -> impl FnOnce(redis::RedisError) -> bullmq_core::Error {
    move |source| bullmq_core::Error::backend(RedisError { context, source })
}

/// A reply of a shape the scripts never produce.
pub(crate) fn unexpected(context: &'static str, found: &redis::Value) -> bullmq_core::Error {
    let source = redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "unexpected reply",
        format!("{found:?}"),
    ));
    bullmq_core::Error::backend(RedisError { context, source })
}
