//! The dedicated connections a backend's blocking commands run on, beside the shared one.
//!
//! A blocking command holds its connection until it returns, and a multiplexed connection
//! answers in order, so nothing may share a connection with one. Each backend (with its
//! clones) therefore has two dedicated connections besides the shared one, opened on first use:
//! - the *blocking* connection, for the worker's `BZPOPMIN` on the marker key (and a relay
//!   node's `XREAD` on its inbox);
//! - the *events* connection, for `QueueEvents`' `XREAD BLOCK`.
//!
//! They are separate so that a worker and a `QueueEvents` built on clones of one backend never
//! wait behind each other. Both are opened without a response timeout (the client's default of
//! 500 ms would cut every wait short); the waits carry their own deadline instead.
//!
//! A name does not survive a reconnect, so it is not set once but every time a dedicated
//! connection is opened; a dedicated connection that fails is dropped and the next call opens
//! (and names) a fresh one. Which names they get is `backend::lifecycle`'s to say.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex as StdMutex, PoisonError};
use std::time::Duration;

use bullmq_core::{Error, Result};
use redis::AsyncConnectionConfig;
use redis::aio::MultiplexedConnection;
use tokio::sync::{Mutex, Notify};

use super::{SharedConnection, timed_out};
use crate::error::wrap;

/// Which dedicated connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dedicated {
    /// The worker's `BZPOPMIN`.
    Blocking,
    /// `QueueEvents`' `XREAD`.
    Events,
}

impl Dedicated {
    fn what(self) -> &'static str {
        match self {
            Self::Blocking => "open the blocking connection",
            Self::Events => "open the events connection",
        }
    }
}

/// A backend's dedicated connections and closing flag, shared by its clones.
#[derive(Default)]
pub(crate) struct ConnState {
    /// For blocking waits (`BZPOPMIN`, a relay inbox's `XREAD`).
    blocking: One,
    /// For `QueueEvents`' reads.
    events: One,
    closing: AtomicBool,
}

/// One dedicated connection, opened on first use so that a blocked call never holds up the
/// shared connection.
#[derive(Default)]
struct One {
    slot: Slot,
    /// Its name: a worker's (or a relay inbox's), `QueueEvents`' once it named it.
    name: StdMutex<Option<String>>,
    /// Wakes the waits in flight when the connection is dropped.
    interrupt: Notify,
}

/// A dedicated connection, with the [generation](SharedConnection::generation) of the node it
/// was opened to.
type Opened = (MultiplexedConnection, u64);

/// Where a dedicated connection is kept.
type Slot = Mutex<Option<Opened>>;

impl ConnState {
    /// The signal that the dedicated connection was dropped under a wait.
    pub(crate) fn interrupt(&self, which: Dedicated) -> &Notify {
        &self.one(which).interrupt
    }

    /// Names the blocking connection `name` (a relay's inbox connection).
    pub(crate) fn with_blocking_name(self, name: Option<String>) -> Self {
        *lock(&self.blocking.name) = name;
        self
    }

    /// Marks the backend closing: no dedicated connection opens from now on.
    pub(crate) fn set_closing(&self) {
        self.closing.store(true, Ordering::SeqCst);
    }

    /// Whether [`set_closing`](Self::set_closing) was called.
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    fn one(&self, which: Dedicated) -> &One {
        match which {
            Dedicated::Blocking => &self.blocking,
            Dedicated::Events => &self.events,
        }
    }

    /// A handle on a dedicated connection to the node `con` sends to now, opened and named
    /// first if there is none (opening bounded by `limit`); an unnamed blocking connection
    /// is named `worker_name()`.
    pub(crate) async fn dedicated(
        &self,
        con: &SharedConnection,
        which: Dedicated,
        limit: Duration,
        worker_name: impl FnOnce() -> String,
    ) -> Result<MultiplexedConnection> {
        if self.is_closing() {
            return Err(Error::Closed("redis backend"));
        }
        let mut slot = self.one(which).slot.lock().await;
        // After a switch, the wait must not go to the old primary on the connection kept.
        con.refresh().await.map_err(wrap(which.what()))?;
        let generation = con.generation();
        match slot.as_ref() {
            Some((opened, opened_to)) if *opened_to == generation => return Ok(opened.clone()),
            // Calls go to another node now (a failover): so must the waits.
            Some(_) => *slot = None,
            None => {}
        }
        let name = lock(&self.one(which).name).clone();
        let name = match which {
            // Node.js names every worker's blocking connection, unnamed workers included.
            Dedicated::Blocking => Some(name.unwrap_or_else(worker_name)),
            Dedicated::Events => name,
        };
        let opened = open(con, which, name.as_deref(), limit).await?;
        *slot = Some((opened.clone(), generation));
        Ok(opened)
    }

    /// Drops a dedicated connection and wakes the waits in flight on it, which let go of their
    /// handles; with the last handle gone the socket closes and Redis forgets the command.
    pub(crate) async fn drop_dedicated(&self, which: Dedicated) {
        let dropped = self.one(which).slot.lock().await.take();
        drop(dropped);
        self.interrupt(which).notify_waiters();
    }

    /// Names a dedicated connection anew: drops the open one, so the next is opened with the
    /// name, and opens it now so that the role is visible in `CLIENT LIST` at once.
    pub(crate) async fn rename(
        &self,
        con: &SharedConnection,
        which: Dedicated,
        name: String,
        limit: Duration,
    ) -> Result<()> {
        *lock(&self.one(which).name) = Some(name.clone());
        self.drop_dedicated(which).await;
        self.dedicated(con, which, limit, || name).await.map(drop)
    }
}

fn lock(name: &StdMutex<Option<String>>) -> std::sync::MutexGuard<'_, Option<String>> {
    name.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Opens a dedicated connection named `name`. Opening is bounded by `limit` (the response
/// timeout), though the waits are not: over a half-open network (a partition, a dead NAT
/// entry) the handshake would otherwise hang for good, and with it the worker's loop, even
/// after the network is back.
async fn open(
    con: &SharedConnection,
    which: Dedicated,
    name: Option<&str>,
    limit: Duration,
) -> Result<MultiplexedConnection> {
    let opening = async {
        let config = AsyncConnectionConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(limit));
        let client = con.node_client().await.map_err(wrap(which.what()))?;
        let mut opened = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(wrap(which.what()))?;
        if let Some(name) = name {
            set_name(&mut opened, name).await?;
        }
        Ok(opened)
    };
    tokio::time::timeout(limit, opening)
        .await
        .map_err(|_| wrap(which.what())(timed_out("opening a dedicated connection")))?
}

/// `CLIENT SETNAME`; servers without `CLIENT` (some managed Redis) are let be, as Node.js does.
async fn set_name(con: &mut MultiplexedConnection, name: &str) -> Result<()> {
    let reply: redis::RedisResult<()> = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(name)
        .query_async(con)
        .await;
    match reply {
        Err(e) if is_unknown_client_command(&e) => Ok(()),
        other => other.map_err(wrap("name the connection")),
    }
}

/// Node.js' `clientCommandMessageReg`: the server does not know the `CLIENT` command.
fn is_unknown_client_command(e: &redis::RedisError) -> bool {
    let message = e.to_string().to_ascii_lowercase();
    message.contains("unknown command")
        && ["'client'", "`client`", "'client", "`client"]
            .iter()
            .any(|quoted| message.contains(quoted))
}
