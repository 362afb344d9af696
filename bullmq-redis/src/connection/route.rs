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

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::{RedisResult, Value};
use tokio::time::Instant;

use tokio::task::AbortHandle;

use super::cluster::{ClusterUrl, Redirect, Topology, read_topology};
use super::fence::Fence;
use super::pool::Pool;
use super::request::Request;
use super::sentinel::{SentinelUrl, Switches, ask_sentinel, is_primary, watch_switches};
use super::{command, link};

/// How many `MOVED`/`ASK` one call follows before it gives up (a cluster that redirects in a
/// circle is being reconfigured; the error then says so).
const MAX_REDIRECTS: usize = 5;

/// The first pause before retrying `TRYAGAIN`/`CLUSTERDOWN`; it doubles each time.
const FIRST_PAUSE: Duration = Duration::from_millis(20);

/// Builds the client of a node from its standalone URL.
type MakeClient = Box<dyn Fn(&str) -> RedisResult<redis::Client> + Send + Sync>;

/// A node's address and the connections to it.
type Served = ((String, u16), Arc<Pool>);

/// Where the primaries are found: a cluster's nodes, or the sentinels of one master.
enum Kind {
    Cluster(ClusterUrl),
    Sentinel(SentinelUrl),
}

/// How to reach any node of one cluster (or sentinel deployment), and which primary serves
/// what.
pub(crate) struct NodeClients {
    kind: Kind,
    /// Makes the client for a node's URL (with the options' CA certificate, if any).
    make: MakeClient,
    /// Nodes to ask: a cluster's seeds, then those it named; or the sentinels.
    known: Mutex<Vec<(String, u16)>>,
    /// The sentinels' switch announcements: routes that resolved before the last one ask
    /// again.
    switches: Arc<Switches>,
    /// The task listening for the sentinels' announcements.
    watcher: Mutex<Option<AbortHandle>>,
}

impl Drop for NodeClients {
    fn drop(&mut self) {
        if let Some(watcher) = self
            .watcher
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            watcher.abort();
        }
    }
}

impl NodeClients {
    /// The nodes of the cluster `url` names, reached through clients `make` builds from a
    /// node's standalone URL.
    pub(crate) fn cluster(
        url: ClusterUrl,
        make: impl Fn(&str) -> RedisResult<redis::Client> + Send + Sync + 'static,
    ) -> Self {
        Self::new(url.seeds.clone(), Kind::Cluster(url), Box::new(make))
    }

    /// The primary the sentinels of `url` name, reached through clients `make` builds.
    pub(crate) fn sentinel(
        url: SentinelUrl,
        make: impl Fn(&str) -> RedisResult<redis::Client> + Send + Sync + 'static,
    ) -> Self {
        Self::new(url.sentinels.clone(), Kind::Sentinel(url), Box::new(make))
    }

    fn new(known: Vec<(String, u16)>, kind: Kind, make: MakeClient) -> Self {
        Self {
            kind,
            make,
            known: Mutex::new(known),
            switches: Arc::default(),
            watcher: Mutex::new(None),
        }
    }

    /// Whether this is a cluster (whose queues may live on different primaries).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.kind, Kind::Cluster(_))
    }

    fn client(&self, host: &str, port: u16) -> RedisResult<redis::Client> {
        let url = match &self.kind {
            Kind::Cluster(url) => url.node_url(host, port),
            Kind::Sentinel(url) => url.node_url(host, port),
        };
        (self.make)(&url)
    }

    fn known(&self) -> Vec<(String, u16)> {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The switches announced so far.
    fn epoch(&self) -> u64 {
        self.switches.epoch.load(Ordering::Acquire)
    }

    /// The sentinels' announcements, behind sentinels.
    pub(super) fn switches(&self) -> Option<&Arc<Switches>> {
        matches!(self.kind, Kind::Sentinel(_)).then_some(&self.switches)
    }

    /// Starts listening for the sentinels' switch announcements, once (nothing to listen to
    /// on a cluster, whose nodes redirect calls themselves).
    fn watch(&self) {
        let Kind::Sentinel(url) = &self.kind else {
            return;
        };
        let mut watcher = self.watcher.lock().unwrap_or_else(PoisonError::into_inner);
        if watcher.is_some() {
            return;
        }
        let sentinels = url
            .sentinels
            .iter()
            .filter_map(|(host, port)| (self.make)(&url.sentinel_url(host, *port)).ok())
            .collect();
        *watcher = Some(watch_switches(
            sentinels,
            url.master.clone(),
            Arc::clone(&self.switches),
        ));
    }

    /// The primary serving `slot` (any slot, behind sentinels), as the first node that
    /// answers says.
    async fn owner_of(&self, slot: u16, timeout: Duration) -> RedisResult<(String, u16)> {
        match &self.kind {
            Kind::Cluster(_) => self.cluster_owner_of(slot, timeout).await,
            Kind::Sentinel(url) => self.sentinel_primary(url, timeout).await,
        }
    }

    /// The primary the first sentinel that answers names, once it says it is one (`ROLE`):
    /// right after a switch the promoted replica may not have taken the role yet, and the
    /// old primary keeps it until the sentinels reconfigure it. Once a switch was heard, only
    /// the primary it named is taken (`READONLY` until it says it is one, retried).
    async fn sentinel_primary(
        &self,
        url: &SentinelUrl,
        timeout: Duration,
    ) -> RedisResult<(String, u16)> {
        // The primary the last switch announced, first: a sentinel asked right after the
        // switch may not have heard of it yet and still name the old one.
        let announced = self
            .switches
            .announced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some((host, port)) = announced
            && let Ok(client) = self.client(&host, port)
            && is_primary(&client, timeout).await == Ok(true)
        {
            return Ok((host, port));
        }
        let mut last_error = None;
        for (host, port) in self.known() {
            let named = match (self.make)(&url.sentinel_url(&host, port)) {
                Ok(client) => ask_sentinel(&client, &url.master, timeout).await,
                Err(e) => Err(e),
            };
            let (host, port) = match named {
                Ok(address) => address,
                Err(e) => {
                    last_error = Some(e);
                    continue;
                }
            };
            // A sentinel that has not caught up with the switch heard names the old primary,
            // which still says it is one for some seconds: never write to it again.
            if self.switches.names_another(&host, port) {
                last_error = Some(not_primary_yet(&host, port));
                continue;
            }
            // One node that cannot be reached is no reason to stop asking the others.
            let answer = match self.client(&host, port) {
                Ok(client) => is_primary(&client, timeout).await,
                Err(e) => Err(e),
            };
            match answer {
                Ok(true) => return Ok((host, port)),
                Ok(false) => last_error = Some(not_primary_yet(&host, port)),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| not_primary_yet("?", 0)))
    }

    async fn cluster_owner_of(&self, slot: u16, timeout: Duration) -> RedisResult<(String, u16)> {
        let topology = self.cluster_topology(Some(slot), timeout).await?;
        topology.owner.ok_or_else(|| unserved(slot))
    }

    /// The clients of every primary of the cluster, as the first node that answers lists
    /// them.
    async fn cluster_primaries(&self, timeout: Duration) -> RedisResult<Vec<redis::Client>> {
        let topology = self.cluster_topology(None, timeout).await?;
        topology
            .primaries
            .iter()
            .map(|(host, port)| self.client(host, *port))
            .collect()
    }

    /// The topology the first known node that answers reads (its nodes are known from then
    /// on); with a `slot`, the first that names its owner.
    async fn cluster_topology(
        &self,
        slot: Option<u16>,
        timeout: Duration,
    ) -> RedisResult<Topology> {
        let known = self.known();
        let mut last_error = None;
        for (host, port) in &known {
            let topology = match self.client(host, *port) {
                Ok(client) => read_topology(&client, host, slot.unwrap_or(0), timeout).await,
                Err(e) => Err(e),
            };
            match topology {
                Ok(topology) => {
                    let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
                    for node in &topology.nodes {
                        if !known.contains(node) {
                            known.push(node.clone());
                        }
                    }
                    if slot.is_none() || topology.owner.is_some() {
                        return Ok(topology);
                    }
                    last_error = Some(unserved(slot.unwrap_or(0)));
                }
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| unserved(slot.unwrap_or(0))))
    }
}

/// The error when the node the sentinels name is not a primary (yet).
fn not_primary_yet(host: &str, port: u16) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly),
        "READONLY",
        format!("the node the sentinels name ({host}:{port}) is not a primary yet"),
    ))
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
    /// The node the last `ASK` named, and the connections to it: a migration sends every call
    /// of the slot there until it ends, so they are kept rather than opened per call.
    asked: Mutex<Option<Served>>,
    /// A call failed in a way that says the slot may have moved: ask before the next call.
    stale: AtomicBool,
    /// The sentinels' switch count when the primary was last asked for.
    epoch_seen: AtomicU64,
    /// Bumped each time calls go to another node: dedicated connections opened before go.
    generation: AtomicU64,
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
            asked: Mutex::new(None),
            stale: AtomicBool::new(true),
            epoch_seen: AtomicU64::new(0),
            generation: AtomicU64::new(0),
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

    /// The database the connections select (0 until the primary is known).
    pub(super) fn db(&self) -> i64 {
        self.lock_current()
            .as_ref()
            .and_then(|(_, pool)| pool.target.as_ref().map(super::direct::Target::db))
            .unwrap_or(0)
    }

    /// Whether the route is a cluster slot's (not a sentinel primary's).
    pub(super) fn is_cluster(&self) -> bool {
        self.nodes.is_cluster()
    }

    /// The clients of every primary: a cluster's, as its nodes list them now; behind
    /// sentinels, the one primary.
    pub(super) async fn primary_clients(&self) -> RedisResult<Vec<redis::Client>> {
        if self.is_cluster() {
            self.nodes.cluster_primaries(self.response_timeout).await
        } else {
            Ok(vec![self.pool().await?.client.clone()])
        }
    }

    fn lock_current(&self) -> std::sync::MutexGuard<'_, Option<Served>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the primary must be asked for before the next call.
    fn is_stale(&self) -> bool {
        self.stale.load(Ordering::Acquire)
            || self.epoch_seen.load(Ordering::Acquire) != self.nodes.epoch()
    }

    /// The sentinels' announcements and the count seen now, behind sentinels.
    pub(super) fn switches(&self) -> Option<(Arc<Switches>, u64)> {
        let switches = self.nodes.switches()?;
        Some((Arc::clone(switches), self.nodes.epoch()))
    }

    /// How many times calls went to another node; see [`ClusterRoute::generation`].
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The pool of the slot's primary, after asking the cluster which it is if a call showed
    /// that it may have changed.
    pub(super) async fn pool(&self) -> RedisResult<Arc<Pool>> {
        if !self.is_stale()
            && let Some((_, pool)) = &*self.lock_current()
        {
            return Ok(Arc::clone(pool));
        }
        let _one_at_a_time = self.refreshing.lock().await;
        if !self.is_stale()
            && let Some((_, pool)) = &*self.lock_current()
        {
            // Refreshed while this call waited.
            return Ok(Arc::clone(pool));
        }
        self.nodes.watch();
        let epoch = self.nodes.epoch();
        let (host, port) = self
            .nodes
            .owner_of(self.slot, self.response_timeout)
            .await?;
        let pool = self.serve_from(None, host, port, epoch)?;
        self.epoch_seen.store(epoch, Ordering::Release);
        self.stale.store(false, Ordering::Release);
        Ok(pool)
    }

    /// Makes `host:port` the slot's primary, unless it is already, or unless `replacing` is
    /// given and another call has replaced it since; `epoch` is the sentinels' switch count
    /// under which it was found.
    fn serve_from(
        &self,
        replacing: Option<&Arc<Pool>>,
        host: String,
        port: u16,
        epoch: u64,
    ) -> RedisResult<Arc<Pool>> {
        let mut current = self.lock_current();
        if let Some((address, pool)) = &*current {
            let superseded = replacing.is_some_and(|old| !Arc::ptr_eq(old, pool));
            if superseded || (address.0 == host && address.1 == port) {
                if !superseded && let Some(fence) = &pool.fence {
                    // Still the primary: its connections may be written to again.
                    fence.renew(epoch);
                }
                return Ok(Arc::clone(pool));
            }
        }
        let client = self.nodes.client(&host, port)?;
        tracing::info!(
            slot = self.slot,
            node = %format!("{host}:{port}"),
            "redis: the queue's calls go to this primary now"
        );
        let mut pool = Pool::new(client, self.max_direct, self.response_timeout);
        if let Some(switches) = self.nodes.switches() {
            pool = pool.fenced(Fence::new(Arc::clone(switches), epoch));
        }
        let pool = Arc::new(pool);
        *current = Some(((host, port), Arc::clone(&pool)));
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(pool)
    }

    /// The connections to `host:port`, which an `ASK` named: those of the last `ASK` when it
    /// named the same node, else new ones (one direct connection: calls asked together share
    /// the pipelined one).
    fn asked_pool(&self, host: String, port: u16) -> RedisResult<Arc<Pool>> {
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((address, pool)) = &*asked
            && address.0 == host
            && address.1 == port
        {
            return Ok(Arc::clone(pool));
        }
        let client = self.nodes.client(&host, port)?;
        let pool = Arc::new(Pool::new(client, 1, self.response_timeout));
        *asked = Some(((host, port), Arc::clone(&pool)));
        Ok(pool)
    }

    /// Notes a failed call: a lost connection, a redirect, a refusal to write or a blocked
    /// command let go (a demoted primary) means the slot may be served elsewhere now; `true`
    /// then.
    pub(super) fn note_failure(&self, e: &redis::RedisError) -> bool {
        let moved = matches!(
            e.code(),
            Some(
                "MOVED"
                    | "ASK"
                    | "CLUSTERDOWN"
                    | "TRYAGAIN"
                    | "READONLY"
                    | "UNBLOCKED"
                    | "NOREPLICAS"
            )
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
            let pool = match self.pool().await {
                Ok(pool) => pool,
                // Mid-failover: no primary yet, or the nodes asked are down.
                Err(e) if self.note_failure(&e) && Instant::now() + pause < deadline => {
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let result = pool.request(request).await;
            let Some(redirect) = redirect_of(&result, &pool.host, request.waited()) else {
                if let Err(e) = &result {
                    self.note_failure(e);
                }
                return result;
            };
            match redirect {
                Redirect::Moved(host, port) if redirects < MAX_REDIRECTS => {
                    redirects += 1;
                    self.serve_from(Some(&pool), host, port, self.nodes.epoch())?;
                }
                Redirect::Ask(host, port) if redirects < MAX_REDIRECTS => {
                    let target = self.asked_pool(host, port)?;
                    let answer = asking(&target, request).await;
                    // Mid-migration the importing node answers `TRYAGAIN` while some of the
                    // script's keys are still on the source (BullMQ's scripts name keys that
                    // may not exist yet): ask the source again after a pause, within the
                    // response timeout, until the slot has moved (`MOVED`).
                    match redirect_of(&answer, &target.host, request.waited()) {
                        Some(Redirect::Retry) if Instant::now() + pause < deadline => {
                            tokio::time::sleep(pause).await;
                            pause *= 2;
                        }
                        _ => return answer,
                    }
                }
                Redirect::Retry if Instant::now() + pause < deadline => {
                    // Ask again where the primary is: a demoted one answers `READONLY`.
                    self.stale.store(true, Ordering::Release);
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                _ => return result,
            }
        }
    }
}

/// Sends `ASKING` and then `request` on one connection of `pool`, a pool of its own: in one
/// write on the direct path; where that cannot go (TLS), one after the other on redis-rs's
/// connection, which nothing else uses, so that nothing comes between the two.
async fn asking(pool: &Pool, request: &Request<'_>) -> RedisResult<Vec<Value>> {
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
    let Some(mut replies) = pool
        .exchange(1 + skip + count, &write, request.waited())
        .await?
    else {
        pool.shared_command(&redis::cmd("ASKING"))
            .await?
            .extract_error()?;
        return pool.request(request).await;
    };
    for skipped in replies.drain(..=skip) {
        skipped.extract_error()?;
    }
    Ok(replies)
}

/// The redirect a call's outcome is: an error with a redirect's code, or replies that are all
/// such errors (nothing of the request ran). Of a `waited` request, the trailing `WAIT`'s
/// reply is left out: it answers with a count, or an error of its own, whatever the rest did.
fn redirect_of(result: &RedisResult<Vec<Value>>, host: &str, waited: bool) -> Option<Redirect> {
    match result {
        Err(e) => Redirect::of(e.code()?, e.detail().unwrap_or_default(), host),
        Ok(replies) => {
            let judged = match replies.split_last() {
                Some((_, before)) if waited => before,
                _ => replies.as_slice(),
            };
            let mut found = None;
            for reply in judged {
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
