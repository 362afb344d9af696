//! `Blocking` for Redis: `BZPOPMIN` on the marker key, on the dedicated blocking connection.
//!
//! Like Node.js, a wait runs against a watchdog (its timeout plus one second): should the
//! command never come back (a connection lost without an error), the connection is dropped
//! and the wait ends as a timeout, so the worker's loop always moves on.

use std::time::Duration;

use bullmq_core::Result;
use bullmq_core::backend::{Blocking, Marker};
use redis::{Cmd, Value};

use super::RedisBackend;
use crate::connection::Dedicated;
use crate::error::wrap_cmd;
use crate::reply;

/// How long past a command's own timeout the watchdog waits.
const WATCHDOG_MARGIN: Duration = Duration::from_secs(1);

/// The timeout `BZPOPMIN` gets, in seconds: never below the server's minimum (0 would block
/// forever), and whole seconds on servers before Redis 6.0, which refuse fractions.
fn block_seconds(timeout: Duration, minimum: Duration, can_double_timeout: bool) -> f64 {
    let seconds = timeout.max(minimum).as_secs_f64();
    if can_double_timeout {
        seconds
    } else {
        seconds.ceil()
    }
}

impl RedisBackend {
    /// Runs a blocking command on a dedicated connection. `None` when the wait was interrupted
    /// (the connection was dropped under it) or the watchdog fired (then the connection is
    /// dropped, so the stray command dies with it); on a failed command the connection is
    /// dropped too, and the next call opens a fresh one, unless the server itself replied
    /// with the error.
    pub(crate) async fn blocking_call(
        &self,
        which: Dedicated,
        cmd: &Cmd,
        watchdog: Duration,
        context: &'static str,
    ) -> Result<Option<Value>> {
        self.blocking_call_unless(which, cmd, watchdog, context, || false)
            .await
    }

    /// [`blocking_call`](Self::blocking_call), which gives up (`None`) without waiting when
    /// `stopped()` holds once it listens for interrupts: an interrupt that set the caller's
    /// flag before that found no wait to wake, and would otherwise be missed for a whole
    /// block.
    pub(crate) async fn blocking_call_unless(
        &self,
        which: Dedicated,
        cmd: &Cmd,
        watchdog: Duration,
        context: &'static str,
        stopped: impl Fn() -> bool,
    ) -> Result<Option<Value>> {
        let state = self.conn_state();
        // Listen before taking the connection, so an interrupt from here on is not missed;
        // one from before shows in the caller's flag, read after listening.
        let interrupted = state.interrupt(which).notified();
        tokio::pin!(interrupted);
        interrupted.as_mut().enable();
        if stopped() {
            return Ok(None);
        }
        // Behind sentinels, a switch lets go of a wait on the old primary: the next one goes
        // to the new primary.
        let switched = self.con.switched();
        let mut con = self.dedicated(&state, which).await?;
        let call = cmd.query_async::<Value>(&mut con);
        let outcome = tokio::select! {
            () = &mut interrupted => return Ok(None),
            () = switched => {
                drop(con);
                state.drop_dedicated(which).await;
                return Ok(None);
            }
            outcome = tokio::time::timeout(watchdog, call) => outcome.ok(),
        };
        drop(con);
        match outcome {
            Some(Ok(value)) => Ok(Some(value)),
            Some(Err(e)) => {
                // On a cluster, a lost connection, a `MOVED` or an `UNBLOCKED` (the node was
                // demoted) means the slot may have moved: the next dedicated connection goes
                // where the cluster says it is now.
                let moved = self.con.note_failure(&e);
                // A refusal the server replied with (`NOPERM`, `READONLY`, …) leaves the
                // connection sound: keep it, rather than open a new one for each retry.
                let replied = matches!(
                    e.kind(),
                    redis::ErrorKind::Server(_) | redis::ErrorKind::Extension
                );
                if moved || !replied {
                    state.drop_dedicated(which).await;
                }
                Err(wrap_cmd(context, cmd)(e))
            }
            None => {
                state.drop_dedicated(which).await;
                Ok(None)
            }
        }
    }
}

impl Blocking for RedisBackend {
    /// `BZPOPMIN <marker> <seconds>`; `None` on timeout or when interrupted by
    /// [`disconnect_blocking`](Blocking::disconnect_blocking) or `close`.
    async fn wait_for_job(&self, timeout: Duration) -> Result<Option<Marker>> {
        let caps = self.capabilities();
        let minimum = bullmq_core::backend::Lifecycle::block_timeouts(self).minimum;
        let seconds = block_seconds(timeout, minimum, caps.can_double_timeout);
        let mut cmd = redis::cmd("BZPOPMIN");
        cmd.arg(&self.keys().marker).arg(seconds);
        let watchdog = Duration::from_secs_f64(seconds) + WATCHDOG_MARGIN;
        let popped = self
            .blocking_call(Dedicated::Blocking, &cmd, watchdog, "wait for a job")
            .await?;
        popped.map_or(Ok(None), |v| reply::marker(&v))
    }

    /// Drops the blocking connection: a wait in flight returns `None` at once. `wait` has
    /// nothing to wait for: the socket closes as soon as the interrupted wait lets go of it.
    async fn disconnect_blocking(&self, _wait: bool) -> Result<()> {
        let state = self.conn_state();
        state.drop_dedicated(Dedicated::Blocking).await;
        Ok(())
    }

    /// Opens (and names) the blocking connection again, unless it is open.
    async fn reconnect_blocking(&self) -> Result<()> {
        let state = self.conn_state();
        self.dedicated(&state, Dedicated::Blocking).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::block_seconds;

    #[test]
    fn timeouts_are_never_zero_and_whole_on_old_servers() {
        let ms = Duration::from_millis;
        assert!((block_seconds(ms(0), ms(1), true) - 0.001).abs() < 1e-12);
        assert!((block_seconds(ms(2500), ms(1), true) - 2.5).abs() < 1e-12);
        assert!((block_seconds(ms(2500), ms(2), false) - 3.0).abs() < 1e-12);
        assert!((block_seconds(ms(0), ms(2), false) - 1.0).abs() < 1e-12);
    }
}
