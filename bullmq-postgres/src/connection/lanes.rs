//! The connections commands run on: a small pool of our own, one statement per checkout.
//!
//! sqlx's `PgPool` pings a connection when it is taken (unless told not to) and always when it
//! is given back, each ping a round trip: three round trips per command where Node.js's `pg`
//! pool makes one, which costs the client and the server more than the command itself on the
//! worker's hot path (measured with `benches/postgres_worker.rs`). A lane is handed out, runs
//! one statement, and goes back with no round trip of its own:
//!
//! - a connection whose statement ended with an answer from the server (rows, or an SQL error
//!   such as upstream's refusals) is healthy and goes back;
//! - one whose statement failed in the client or the network, or with the server's notice that
//!   it ended the session (`57P..`, `08...`), is closed; so is one on a server that turned
//!   read-only (`25006`, a demoted primary), so that the next one reaches the new primary;
//! - one whose statement was abandoned mid-way (its future dropped) is closed with the lane, so
//!   no later command reads a stale reply;
//! - one that sat idle longer than [`PING_IDLE_AFTER`] is pinged before use, so a connection
//!   the server or a firewall dropped meanwhile is replaced instead of failing a command.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use sqlx::postgres::{PgArguments, PgConnectOptions, PgConnection, PgQueryResult, PgRow};
use sqlx::{ConnectOptions as _, Connection as _, Postgres};
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;
use tracing::Instrument as _;

use super::open::target;
use crate::error::wrap;
use bullmq_core::telemetry::ConnectionLog;

use super::link;

/// A connection idle longer than this is pinged before it is used again.
pub(crate) const PING_IDLE_AFTER: Duration = Duration::from_secs(30);

/// Up to `size` connections, opened when first needed and kept while healthy.
pub(crate) struct Lanes {
    connect: PgConnectOptions,
    timeout: Duration,
    permits: Semaphore,
    /// Healthy connections and when each was last given back.
    idle: Mutex<Vec<(PgConnection, Instant)>>,
    /// Whether the server answers: losses and recoveries are logged.
    link: ConnectionLog,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not `connect`: sqlx's `PgConnectOptions` prints the password.
        f.debug_struct("Lanes")
            .field("timeout", &self.timeout)
            .field("available", &self.permits.available_permits())
            .finish_non_exhaustive()
    }
}

/// One checked-out connection: give it back with [`Lane::give_back`]; dropped otherwise.
struct Lane<'a> {
    lanes: &'a Lanes,
    conn: PgConnection,
    _permit: SemaphorePermit<'a>,
}

impl Lanes {
    /// Lanes to `connect`, at most `size` at once; waiting for one, or opening one, may take
    /// up to `timeout`.
    pub(crate) fn new(connect: PgConnectOptions, size: u32, timeout: Duration) -> Self {
        Self {
            link: ConnectionLog::new("postgres connection", target(&connect)),
            connect,
            timeout,
            permits: Semaphore::new(usize::try_from(size).unwrap_or(usize::MAX)),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// A connection: an idle one (pinged first if idle long), else a new one.
    async fn checkout(&self) -> Result<Lane<'_>, sqlx::Error> {
        let permit = match tokio::time::timeout(self.timeout, self.permits.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(sqlx::Error::PoolClosed),
            Err(_) => return Err(sqlx::Error::PoolTimedOut),
        };
        loop {
            let idle = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            let Some((mut conn, since)) = idle else { break };
            if since.elapsed() < PING_IDLE_AFTER || conn.ping().await.is_ok() {
                return Ok(Lane {
                    lanes: self,
                    conn,
                    _permit: permit,
                });
            }
        }
        let opening = tokio::time::timeout(self.timeout, self.connect.connect());
        // While the server is lost, opening a connection is the attempt to reconnect.
        let opened = if self.link.is_down() {
            opening.instrument(self.link.reconnect_span()).await
        } else {
            opening.await
        };
        let conn = match opened {
            Ok(conn) => {
                link::observe(&self.link, &conn);
                conn?
            }
            Err(_) => return Err(sqlx::Error::PoolTimedOut),
        };
        Ok(Lane {
            lanes: self,
            conn,
            _permit: permit,
        })
    }

    /// Runs one statement (`run`) on a lane, noting whether the connection works; the lane
    /// goes back when `fit` says the session survived the outcome.
    async fn one_statement<T>(
        &self,
        run: impl AsyncFnOnce(&mut PgConnection) -> Result<T, sqlx::Error>,
        fit: impl FnOnce(&Result<T, sqlx::Error>) -> bool,
    ) -> Result<T, sqlx::Error> {
        let outcome = async {
            let mut lane = self.checkout().await?;
            let outcome = run(lane.conn()).await;
            lane.give_back(fit(&outcome));
            outcome
        }
        .await;
        link::observe(&self.link, &outcome);
        outcome
    }

    /// Runs `work` on one connection, for what takes more than one statement on the same
    /// session (a transaction) or runs on a caller's executor; the connection goes back when
    /// `answered` says the server answered `work`'s outcome (the session is fit for reuse),
    /// and is closed otherwise. `context` names what failed when no connection is had.
    pub(crate) async fn with_lane<T>(
        &self,
        context: &'static str,
        work: impl AsyncFnOnce(&mut PgConnection) -> bullmq_core::Result<T>,
        answered: impl FnOnce(&bullmq_core::Result<T>) -> bool,
    ) -> bullmq_core::Result<T> {
        let mut lane = self.checkout().await.map_err(wrap(context))?;
        let outcome = work(lane.conn()).await;
        lane.give_back(answered(&outcome));
        outcome
    }

    /// A statement run on a lane failed in the client or the network (`error`): the
    /// connection is lost, logged once until one works again.
    pub(crate) fn lost(&self, error: &dyn std::fmt::Display) {
        self.link.lost(error);
    }

    /// Closes the idle connections and refuses new checkouts; connections in use are closed
    /// as they come back.
    pub(crate) async fn close(&self) {
        self.permits.close();
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(PoisonError::into_inner));
        for (conn, _) in idle {
            let _ = conn.close().await;
        }
    }
}

impl Lane<'_> {
    /// The connection.
    fn conn(&mut self) -> &mut PgConnection {
        &mut self.conn
    }

    /// Puts the connection back when `healthy` (the server answered: the connection works);
    /// closes it otherwise.
    fn give_back(self, healthy: bool) {
        if healthy {
            self.lanes.link.up();
        }
        if healthy && !self.lanes.permits.is_closed() {
            self.lanes
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((self.conn, Instant::now()));
        }
    }
}

/// SQLSTATE `read_only_sql_transaction`.
const READ_ONLY: &str = "25006";

/// Whether the session survives `outcome`: a result, or an SQL error the server answered
/// with that does not end the session.
pub(crate) fn healthy<T>(outcome: &Result<T, sqlx::Error>) -> bool {
    match outcome {
        Ok(_) => true,
        Err(sqlx::Error::Database(db)) => {
            let code = db.code();
            let code = code.as_deref().unwrap_or_default();
            // 25006: the server is read-only (a demoted primary after a failover). This
            // session stays on it, so it is replaced: a new one reaches the new primary.
            !(code.starts_with("08") || code.starts_with("57P") || code == READ_ONLY)
        }
        Err(_) => false,
    }
}

/// A statement with its parameters bound, ready to run.
pub(crate) type Query<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

/// Running a query on a lane, as `fetch_all(&pool)` runs it on a pool.
pub(crate) trait OnLane {
    /// Every row.
    fn fetch_all_on(
        self,
        lanes: &Lanes,
    ) -> impl Future<Output = Result<Vec<PgRow>, sqlx::Error>> + Send;

    /// No rows: what the statement did.
    fn execute_on(
        self,
        lanes: &Lanes,
    ) -> impl Future<Output = Result<PgQueryResult, sqlx::Error>> + Send;
}

impl OnLane for Query<'_> {
    async fn fetch_all_on(self, lanes: &Lanes) -> Result<Vec<PgRow>, sqlx::Error> {
        lanes
            .one_statement(async |conn| self.fetch_all(conn).await, healthy)
            .await
    }

    async fn execute_on(self, lanes: &Lanes) -> Result<PgQueryResult, sqlx::Error> {
        lanes
            .one_statement(async |conn| self.execute(conn).await, healthy)
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr as _;

    use super::*;

    #[test]
    fn debug_never_shows_the_password() {
        for url in [
            "postgres://bob:s3cret@db/app",
            "postgres://bob@db/app?password=s3cret",
        ] {
            let connect = PgConnectOptions::from_str(url).expect("a valid URL");
            let lanes = Lanes::new(connect, 2, Duration::from_secs(1));
            let shown = format!("{lanes:?}");
            assert!(!shown.contains("s3cret"), "{shown}");
        }
    }
}
