//! Whether the command connection is up, as its calls show it: the first failure of the
//! connection after a success is logged at `warn`, the first success after that at `info`
//! (inside a `reconnect` span), each naming the server by address only, never credentials.

use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use redis::RedisError;
use tracing::Span;

/// The link's state, shared by every call on one connection pool.
pub(super) struct Link {
    /// `host:port` (or the socket path): what the logs name.
    address: String,
    down: AtomicBool,
    since: Mutex<Option<Instant>>,
}

impl Link {
    pub(super) fn new(address: String) -> Self {
        Self {
            address,
            down: AtomicBool::new(false),
            since: Mutex::new(None),
        }
    }

    /// True after a connection failure, until a call succeeds.
    pub(super) fn is_down(&self) -> bool {
        self.down.load(Ordering::Relaxed)
    }

    /// The span a call made while the link is down runs in: the attempt to reconnect.
    pub(super) fn reconnect_span(&self) -> Span {
        tracing::info_span!(
            target: "bullmq",
            "reconnect",
            otel.name = "reconnect",
            messaging.system = "bullmq",
            server.address = %self.address,
        )
    }

    /// Notes how a call ended.
    pub(super) fn observe<T>(&self, result: &Result<T, RedisError>) {
        match result {
            Err(e) if is_connection_failure(e) && !self.down.swap(true, Ordering::Relaxed) => {
                *self.since.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
                tracing::warn!(
                    target: "bullmq",
                    error = %e,
                    server.address = %self.address,
                    "redis connection lost; reconnecting on the next call"
                );
            }
            Ok(_) if self.is_down() && self.down.swap(false, Ordering::Relaxed) => {
                let down_for = self
                    .since
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
                    .map(|t| u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX));
                tracing::info!(
                    target: "bullmq",
                    down_for_ms = down_for,
                    server.address = %self.address,
                    "redis connection recovered"
                );
            }
            _ => {}
        }
    }
}

/// A failure of the connection (refused, dropped, timed out), not a refusal by the server.
fn is_connection_failure(e: &RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal()
}
