//! Sending a cluster slot's calls to the primary that serves it now.
//!
//! A queue's keys share one hash tag, hence one slot, hence one primary: the backend keeps the
//! standalone path's [`Pool`] (direct connections, one pipelined connection) to that node, and
//! only changes which node it is when the cluster says the slot moved:
//! - `MOVED`: the slot lives elsewhere now (a failover or a resharding); the call goes there,
//!   and so do the calls after it.
//! - `ASK`: the key is being migrated; the call is asked once of the target, after `ASKING`.
//! - `TRYAGAIN`, `CLUSTERDOWN`: the cluster cannot take it now; retried with a growing pause
//!   within the response timeout.
//! - a lost connection: the call fails (it may have run), and the next one asks the nodes
//!   (`CLUSTER SLOTS`) which primary serves the slot before it goes.
//!
//! Script caches are per node: a pool's `EVALSHA` meets `NOSCRIPT` on a node that never saw
//! the script and falls back to `EVAL` there, as on a standalone server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::{RedisResult, Value};
use tokio::time::Instant;

use super::cluster::{ClusterUrl, Redirect, read_topology};
use super::{Pool, Request, command, link};

/// How many `MOVED`/`ASK` one call follows before it gives up (a cluster that redirects in a
/// circle is being reconfigured; the error then says so).
const MAX_REDIRECTS: usize = 5;

/// The first pause before retrying `TRYAGAIN`/`CLUSTERDOWN`; it doubles each time.
const FIRST_PAUSE: Duration = Duration::from_millis(20);

/// Builds the client of a node from its standalone URL.
type MakeClient = Box<dyn Fn(&str) -> RedisResult<redis::Client> + Send + Sync>;

/// A node's address and the connections to it.
type Served = ((String, u16), Arc<Pool>);

/// How to reach any node of one cluster, and which nodes are known.
pub(crate) struct NodeClients {
    url: ClusterUrl,
    /// Makes the client for a node's URL (with the options' CA certificate, if any).
    make: MakeClient,
    /// Nodes to ask for the topology: the seeds, then those the cluster named.
    known: Mutex<Vec<(String, u16)>>,
}

impl NodeClients {
    /// The nodes of the cluster `url` names, reached through clients `make` builds from a
    /// node's standalone URL.
    pub(crate) fn new(
        url: ClusterUrl,
        make: impl Fn(&str) -> RedisResult<redis::Client> + Send + Sync + 'static,
    ) -> Self {
        Self {
            known: Mutex::new(url.seeds.clone()),
            url,
            make: Box::new(make),
        }
    }

    fn client(&self, host: &str, port: u16) -> RedisResult<redis::Client> {
        (self.make)(&self.url.node_url(host, port))
    }

    /// The primary serving `slot`, as the first node that answers says.
    async fn owner_of(&self, slot: u16, timeout: Duration) -> RedisResult<(String, u16)> {
        let known = self
            .known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut last_error = None;
        for (host, port) in &known {
            let topology = match self.client(host, *port) {
                Ok(client) => read_topology(&client, host, slot, timeout).await,
                Err(e) => Err(e),
            };
            match topology {
                Ok(topology) => {
                    let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
                    for node in topology.nodes {
                        if !known.contains(&node) {
                            known.push(node);
                        }
                    }
                    match topology.owner {
                        Some(owner) => return Ok(owner),
                        None => last_error = Some(unserved(slot)),
                    }
                }
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| unserved(slot)))
    }
}

/// The error when no node says who serves `slot`.
fn unserved(slot: u16) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::ClusterDown),
        "CLUSTERDOWN",
        format!("no node of the cluster serves slot {slot}"),
    ))
}

/// The calls of one slot, and the primary they go to.
pub(super) struct ClusterRoute {
    nodes: Arc<NodeClients>,
    slot: u16,
    max_direct: usize,
    response_timeout: Duration,
    /// The primary's address and connections; `None` until first asked.
    current: Mutex<Option<Served>>,
    /// A call failed in a way that says the slot may have moved: ask before the next call.
    stale: AtomicBool,
    /// One refresh at a time; the calls behind it take its result.
    refreshing: tokio::sync::Mutex<()>,
}

impl ClusterRoute {
    /// The route of `slot`; its primary is found on first use.
    pub(super) fn new(
        nodes: Arc<NodeClients>,
        slot: u16,
        max_direct: usize,
        response_timeout: Duration,
    ) -> Self {
        Self {
            nodes,
            slot,
            max_direct,
            response_timeout,
            current: Mutex::new(None),
            stale: AtomicBool::new(true),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// A route for another slot of the same cluster.
    pub(super) fn sibling(&self, slot: u16) -> Self {
        Self::new(
            Arc::clone(&self.nodes),
            slot,
            self.max_direct,
            self.response_timeout,
        )
    }

    pub(super) fn slot(&self) -> u16 {
        self.slot
    }

    fn lock_current(&self) -> std::sync::MutexGuard<'_, Option<Served>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The pool of the slot's primary, after asking the cluster which it is if a call showed
    /// that it may have changed.
    pub(super) async fn pool(&self) -> RedisResult<Arc<Pool>> {
        if !self.stale.load(Ordering::Acquire)
            && let Some((_, pool)) = &*self.lock_current()
        {
            return Ok(Arc::clone(pool));
        }
        let _one_at_a_time = self.refreshing.lock().await;
        if !self.stale.load(Ordering::Acquire)
            && let Some((_, pool)) = &*self.lock_current()
        {
            // Refreshed while this call waited.
            return Ok(Arc::clone(pool));
        }
        let (host, port) = self
            .nodes
            .owner_of(self.slot, self.response_timeout)
            .await?;
        let pool = self.serve_from(None, host, port)?;
        self.stale.store(false, Ordering::Release);
        Ok(pool)
    }

    /// Makes `host:port` the slot's primary, unless it is already, or unless `replacing` is
    /// given and another call has replaced it since.
    fn serve_from(
        &self,
        replacing: Option<&Arc<Pool>>,
        host: String,
        port: u16,
    ) -> RedisResult<Arc<Pool>> {
        let mut current = self.lock_current();
        if let Some((address, pool)) = &*current {
            let superseded = replacing.is_some_and(|old| !Arc::ptr_eq(old, pool));
            if superseded || (address.0 == host && address.1 == port) {
                return Ok(Arc::clone(pool));
            }
        }
        let client = self.nodes.client(&host, port)?;
        tracing::info!(
            slot = self.slot,
            node = %format!("{host}:{port}"),
            "redis cluster: the queue's slot is served by this primary now"
        );
        let pool = Arc::new(Pool::new(client, self.max_direct, self.response_timeout));
        *current = Some(((host, port), Arc::clone(&pool)));
        Ok(pool)
    }

    /// Notes a failed call: a lost connection, a redirect, a refusal to write or a blocked
    /// command let go (a demoted primary) means the slot may be served elsewhere now; `true`
    /// then.
    pub(super) fn note_failure(&self, e: &redis::RedisError) -> bool {
        let moved = matches!(
            e.code(),
            Some("MOVED" | "ASK" | "CLUSTERDOWN" | "TRYAGAIN" | "READONLY" | "UNBLOCKED")
        );
        let moved = moved || link::is_connection_failure(e);
        if moved {
            self.stale.store(true, Ordering::Release);
        }
        moved
    }

    /// Sends `request` to the slot's primary, following the cluster's redirects.
    pub(super) async fn request(&self, request: &Request<'_>) -> RedisResult<Vec<Value>> {
        let deadline = Instant::now() + self.response_timeout;
        let mut pause = FIRST_PAUSE;
        let mut redirects = 0;
        loop {
            let pool = self.pool().await?;
            let result = pool.request(request).await;
            let Some(redirect) = redirect_of(&result, &pool.host) else {
                if let Err(e) = &result {
                    self.note_failure(e);
                }
                return result;
            };
            match redirect {
                Redirect::Moved(host, port) if redirects < MAX_REDIRECTS => {
                    redirects += 1;
                    self.serve_from(Some(&pool), host, port)?;
                }
                Redirect::Ask(host, port) if redirects < MAX_REDIRECTS => {
                    let client = self.nodes.client(&host, port)?;
                    let target = Pool::new(client, 1, self.response_timeout);
                    return match asking(&target, request).await? {
                        Some(replies) => Ok(replies),
                        // Not on the direct path (TLS): the `ASK` stays the answer.
                        None => result,
                    };
                }
                Redirect::Retry if Instant::now() + pause < deadline => {
                    self.stale.store(true, Ordering::Release);
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                _ => return result,
            }
        }
    }
}

/// Sends `ASKING` and then `request` on one connection of `pool`; `None` where the direct path
/// cannot go.
async fn asking(pool: &Pool, request: &Request<'_>) -> RedisResult<Option<Vec<Value>>> {
    let asking = |buf: &mut Vec<u8>| command::write(buf, [&b"ASKING"[..]]);
    let (count, skip) = match *request {
        Request::One { .. } => (1, 0),
        Request::Pipeline { offset, count, .. } => (count, offset),
    };
    let write = |buf: &mut Vec<u8>| {
        asking(buf);
        match request {
            Request::One { write, .. } => write(buf),
            Request::Pipeline { pipeline, .. } => {
                buf.extend_from_slice(&pipeline.get_packed_pipeline());
            }
        }
    };
    let Some(mut replies) = pool.exchange(1 + skip + count, &write).await? else {
        return Ok(None);
    };
    for skipped in replies.drain(..=skip) {
        skipped.extract_error()?;
    }
    Ok(Some(replies))
}

/// The redirect a call's outcome is: an error with a redirect's code, or replies that are all
/// such errors (nothing of the request ran).
fn redirect_of(result: &RedisResult<Vec<Value>>, host: &str) -> Option<Redirect> {
    match result {
        Err(e) => Redirect::of(e.code()?, e.detail().unwrap_or_default(), host),
        Ok(replies) => {
            let mut found = None;
            for reply in replies {
                let Value::ServerError(e) = reply else {
                    return None;
                };
                let redirect = Redirect::of(e.code(), e.details().unwrap_or_default(), host)?;
                found.get_or_insert(redirect);
            }
            found
        }
    }
}
