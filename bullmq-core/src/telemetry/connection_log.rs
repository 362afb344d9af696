//! A connection's ups and downs, logged the same way by every backend: the first failure of
//! the connection after a success at `warn`, the first success after that at `info`; a call
//! that reconnects runs in a `reconnect` span. Each names the server without credentials.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use tracing::Span;

/// The state of one connection (or pool of connections) to one server, for a backend to feed
/// with its calls' outcomes.
#[derive(Debug)]
pub struct ConnectionLog {
    /// What is connected, in the messages: `"redis connection"`, `"postgres LISTEN connection"`.
    what: &'static str,
    /// The server without credentials (`host:port`, `postgres://user@host:port/db`).
    address: String,
    down: AtomicBool,
    since: Mutex<Option<Instant>>,
}

impl ConnectionLog {
    /// A log for `what` (as the messages name it) to `address`, which must carry no
    /// credentials.
    #[must_use]
    pub fn new(what: &'static str, address: String) -> Self {
        Self {
            what,
            address,
            down: AtomicBool::new(false),
            since: Mutex::new(None),
        }
    }

    /// True after a connection failure, until a call succeeds.
    #[must_use]
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Relaxed)
    }

    /// The span a call made while the connection is down runs in: the attempt to reconnect.
    #[must_use]
    pub fn reconnect_span(&self) -> Span {
        tracing::info_span!(
            target: "bullmq",
            "reconnect",
            otel.name = "reconnect",
            messaging.system = "bullmq",
            server.address = %self.address,
        )
    }

    /// The connection failed (`error` says how): logged once until it recovers.
    pub fn lost(&self, error: &dyn std::fmt::Display) {
        if self.down.swap(true, Ordering::Relaxed) {
            return;
        }
        *self.since.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        tracing::warn!(
            target: "bullmq",
            error = %error,
            server.address = %self.address,
            "{} lost; reconnecting",
            self.what,
        );
    }

    /// A call went through: logged when the connection had been lost.
    pub fn up(&self) {
        if !self.is_down() || !self.down.swap(false, Ordering::Relaxed) {
            return;
        }
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
            "{} recovered",
            self.what,
        );
    }
}
