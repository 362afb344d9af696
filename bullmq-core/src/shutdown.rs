//! Graceful shutdown on deploy: wait for SIGTERM or SIGINT, then close every worker, pool and
//! event reader together within a deadline. What was in flight either finishes or, past the
//! deadline, is cancelled and left active for the stalled check of a worker elsewhere: never
//! lost.
//!
//! ```no_run
//! # async fn demo<B: bullmq_core::backend::Backend, P: bullmq_core::worker::Processor<B>>(
//! #     pool: bullmq_core::WorkerPool<B, P>, events: bullmq_core::QueueEvents<B>,
//! # ) -> std::io::Result<()> {
//! use std::time::Duration;
//! use bullmq_core::Shutdown;
//!
//! // Kubernetes sends SIGTERM, then SIGKILL after `terminationGracePeriodSeconds` (30 s by
//! // default): finish within 25 s to leave room for the rest of the exit.
//! let all_finished = Shutdown::new(Duration::from_secs(25))
//!     .with(&pool)
//!     .with(&events)
//!     .on_signal()
//!     .await?;
//! std::process::exit(if all_finished { 0 } else { 1 });
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::QueueEvents;
use crate::backend::{Backend, Events, Lifecycle};
use crate::pool::WorkerPool;
use crate::worker::{Processor, Worker};

/// How long past the deadline closing may take (the connections' own close) before
/// [`Shutdown::close`] stops waiting.
const PAST_DEADLINE: Duration = Duration::from_secs(5);

/// The future of [`Close::close_within`].
pub type Closing<'a> = Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

/// Something that closes gracefully within a deadline: a [`Worker`], a [`WorkerPool`], a
/// [`QueueEvents`] reader.
pub trait Close: Send + Sync {
    /// Closes, letting the work in progress finish for at most `timeout`, then cancelling what
    /// is left (jobs stay active for the stalled check). True when everything finished in time.
    fn close_within(&self, timeout: Duration) -> Closing<'_>;
}

impl<B: Backend, P: Processor<B>> Close for Worker<B, P> {
    fn close_within(&self, timeout: Duration) -> Closing<'_> {
        Box::pin(self.close_timeout(timeout))
    }
}

impl<B: Backend, P: Processor<B>> Close for WorkerPool<B, P> {
    fn close_within(&self, timeout: Duration) -> Closing<'_> {
        Box::pin(self.close_timeout(timeout))
    }
}

impl<B: Events + Lifecycle + Clone + 'static> Close for QueueEvents<B> {
    fn close_within(&self, _timeout: Duration) -> Closing<'_> {
        Box::pin(async move {
            self.close().await;
            true
        })
    }
}

/// The signal that asked the process to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `SIGTERM`: what Kubernetes, systemd and Docker send.
    Terminate,
    /// `SIGINT`: ctrl-c.
    Interrupt,
}

/// Waits for `SIGTERM` or `SIGINT` (ctrl-c only, where there is no `SIGTERM`).
///
/// # Errors
///
/// When the signal handlers cannot be installed.
pub async fn signal() -> std::io::Result<Signal> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::select! {
            _ = term.recv() => Ok(Signal::Terminate),
            _ = int.recv() => Ok(Signal::Interrupt),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.map(|()| Signal::Interrupt)
    }
}

/// Closes workers, pools and readers together, on a signal or when asked. See the
/// [module docs](self).
pub struct Shutdown<'a> {
    parts: Vec<&'a dyn Close>,
    timeout: Duration,
}

impl std::fmt::Debug for Shutdown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shutdown")
            .field("parts", &self.parts.len())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<'a> Shutdown<'a> {
    /// Nothing to close yet; jobs in progress get at most `timeout` to finish.
    #[must_use]
    pub fn new(timeout: Duration) -> Self {
        Self {
            parts: Vec::new(),
            timeout,
        }
    }

    /// Adds a worker, pool or reader to close.
    #[must_use]
    pub fn with(mut self, part: &'a dyn Close) -> Self {
        self.parts.push(part);
        self
    }

    /// Closes everything together; true when every job in progress finished in time.
    pub async fn close(self) -> bool {
        let timeout = self.timeout;
        let all =
            futures_util::future::join_all(self.parts.iter().map(|p| p.close_within(timeout)));
        match tokio::time::timeout(timeout.saturating_add(PAST_DEADLINE), all).await {
            Ok(finished) => finished.into_iter().all(|f| f),
            Err(_) => {
                tracing::warn!(target: "bullmq", "shutdown: closing took longer than the deadline; giving up on it");
                false
            }
        }
    }

    /// Waits for `SIGTERM` or `SIGINT`, then [closes](Self::close) everything.
    ///
    /// # Errors
    ///
    /// When the signal handlers cannot be installed (nothing is closed then).
    pub async fn on_signal(self) -> std::io::Result<bool> {
        let received = signal().await?;
        tracing::info!(target: "bullmq", signal = ?received, parts = self.parts.len(), "shutting down");
        Ok(self.close().await)
    }
}
