//! The connection the backend's commands and scripts run on (blocking waits and event reads
//! have their own, see `backend::lifecycle`).
//!
//! A call that finds no other call in flight takes a [direct connection](direct): it writes
//! its request and reads its reply itself, with no task in between, which is what a
//! latency-bound caller (one awaited `add` after another, a worker at concurrency 1) needs.
//! Calls in flight together share one [pipelined connection](pipelined), which sends the
//! requests that queue up in one write: a busy worker or concurrent producers then share the
//! system calls of both the client and Redis, which is what a Redis-bound load needs.
//! Where the direct path cannot go (TLS, RESP3), every call takes redis-rs's multiplexed
//! connection (`ConnectionManager`).
//!
//! Failures: a connection that fails or times out mid-request is dropped (its reply may still
//! be on the way, so it cannot be reused) and the caller gets the error; the next call opens a
//! fresh one. An idle connection that the server closed is noticed and replaced before use.

mod cluster;
pub(crate) mod command;
mod direct;
pub(crate) use direct::{invalid_reply, timed_out};
mod fence;
mod frame;
mod link;
mod multi_host;
mod pipelined;
mod resp;
mod route;
mod sentinel;

pub(crate) use cluster::{ClusterUrl, hash_tag, slot};
pub(crate) use route::NodeClients;
pub(crate) use sentinel::SentinelUrl;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use tokio::sync::{OnceCell, watch};

use bullmq_core::telemetry::ConnectionLog;
use direct::{DirectConnection, Target};
use fence::Fence;
use pipelined::Pipelined;
use route::ClusterRoute;
use tracing::Instrument;

/// How long opening a connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The backend's command connection; clones share it.
#[derive(Clone)]
pub(crate) struct SharedConnection {
    route: Route,
}

/// Which server a call goes to.
#[derive(Clone)]
enum Route {
    /// A standalone server: always this pool.
    Fixed(Arc<Pool>),
    /// The primary of one cluster slot, whichever node that is now.
    Routed(Arc<ClusterRoute>),
}

/// One request, as each path sends it: written into a buffer (direct and pipelined paths), or
/// as redis-rs's types (the multiplexed path). The writers are `Fn`: a call redirected by a
/// cluster is written again.
pub(super) enum Request<'a> {
    /// One command.
    One {
        write: &'a (dyn Fn(&mut Vec<u8>) + Sync),
        cmd: &'a (dyn Fn() -> Cmd + Sync),
    },
    /// A pipeline, of whose replies the `count` from `offset` on are wanted.
    Pipeline {
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
        /// The pipeline ends with `WAIT` (see [`crate::replication`]): it goes on a direct
        /// connection of its own, and only the replies before the `WAIT` tell a redirect.
        waited: bool,
    },
}

impl Request<'_> {
    /// Whether the request ends with `WAIT`.
    pub(super) fn waited(&self) -> bool {
        matches!(self, Request::Pipeline { waited: true, .. })
    }
}

/// The connections to one server.
struct Pool {
    client: redis::Client,
    /// The server's host, for a cluster's redirect that leaves it out.
    host: String,
    /// `None` when the server is reached in a way the direct path does not speak (TLS, RESP3).
    target: Option<Target>,
    /// How many direct connections may exist at once.
    max_direct: usize,
    /// Calls between their start and their reply, on any connection.
    in_flight: AtomicUsize,
    /// Direct connections in use plus idle ones.
    direct_count: AtomicUsize,
    idle: Mutex<Vec<DirectConnection>>,
    /// For calls in flight together; replaced when it breaks.
    pipelined: Mutex<PipelinedSlot>,
    /// For every call when there is no `target`.
    shared: OnceCell<ConnectionManager>,
    response_timeout: Duration,
    /// Up or down, as calls show it (logged on each change).
    link: ConnectionLog,
    /// Behind sentinels: nothing is sent once the primary was switched.
    fence: Option<Arc<Fence>>,
}

/// The pipelined connection's state.
enum PipelinedSlot {
    /// Never opened, or its opening failed.
    Empty,
    /// A task is opening it; the result arrives here.
    Opening(watch::Receiver<Option<RedisResult<Arc<Pipelined>>>>),
    /// Open, or broken (then the next call opens another).
    Open(Arc<Pipelined>),
}

/// The error of calls waiting for a pipelined connection whose opening task was dropped (the
/// runtime is shutting down).
fn abandoned() -> redis::RedisError {
    std::io::Error::new(
        std::io::ErrorKind::Interrupted,
        "opening a connection was abandoned",
    )
    .into()
}

/// A direct connection checked out of the pool; counted in `direct_count` until dropped,
/// returned to the pool only by [`Pool::give_back`].
struct Lease<'a> {
    pool: &'a Pool,
    con: Option<DirectConnection>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if self.con.take().is_some() {
            // Not given back: dropped after an error, a timeout or a cancelled call.
            self.pool.direct_count.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Counts a call in [`Pool::in_flight`] until it ends, however it ends.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl SharedConnection {
    /// Opens the first connection at once, so that a wrong address, password or certificate
    /// fails here rather than on the first call.
    pub(crate) async fn connect(
        client: redis::Client,
        max_direct: usize,
        response_timeout: Duration,
    ) -> RedisResult<Self> {
        let pool = Arc::new(Pool::new(client, max_direct, response_timeout));
        pool.open_first().await?;
        Ok(Self {
            route: Route::Fixed(pool),
        })
    }

    /// Connects to the primary that serves `slot` of the cluster `nodes` reaches (the primary
    /// the sentinels name, whatever `slot`), opening its first connection at once.
    pub(crate) async fn connect_routed(
        nodes: Arc<NodeClients>,
        slot: u16,
        max_direct: usize,
        response_timeout: Duration,
    ) -> RedisResult<Self> {
        let route = ClusterRoute::new(nodes, slot, max_direct, response_timeout);
        route.pool().await?.open_first().await?;
        Ok(Self {
            route: Route::Routed(Arc::new(route)),
        })
    }

    /// The connection for keys in `slot`: this one, unless it serves another slot of a
    /// cluster (then one that finds that slot's primary on first use).
    pub(crate) fn for_slot(&self, slot: u16) -> Self {
        match &self.route {
            Route::Routed(route) if route.is_cluster() && route.slot() != slot => Self {
                route: Route::Routed(Arc::new(route.sibling(slot))),
            },
            _ => self.clone(),
        }
    }

    /// Whether this connection goes to a cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(&self.route, Route::Routed(route) if route.is_cluster())
    }

    /// Changes each time calls start going to another node (after a failover): a dedicated
    /// connection opened under another value goes to the old one.
    pub(crate) fn generation(&self) -> u64 {
        match &self.route {
            Route::Fixed(_) => 0,
            Route::Routed(route) => route.generation(),
        }
    }

    /// Resolves once the sentinels announce a switch after this call (never on a standalone
    /// server or a cluster): a wait in flight on the old primary then lets go.
    pub(crate) fn switched(&self) -> impl Future<Output = ()> + Send + 'static {
        let watching = match &self.route {
            Route::Routed(route) => route.switches(),
            Route::Fixed(_) => None,
        };
        async move {
            match watching {
                Some((switches, seen)) => switches.moved_past(seen).await,
                None => std::future::pending().await,
            }
        }
    }

    /// When this connection's sentinel watcher last moved the epoch on: a switch heard, or a
    /// resubscription after which one may have gone unheard (the last 16; empty elsewhere).
    pub(crate) fn switches_heard(&self) -> Vec<std::time::SystemTime> {
        match &self.route {
            Route::Routed(route) => route
                .switches()
                .map(|(switches, _)| switches.heard_at())
                .unwrap_or_default(),
            Route::Fixed(_) => Vec::new(),
        }
    }

    /// Asks where the primary is now if a switch or a failed call says it may have moved, so
    /// that [`generation`](Self::generation) tells whether a dedicated connection still goes
    /// to it.
    pub(crate) async fn refresh(&self) -> RedisResult<()> {
        match &self.route {
            Route::Fixed(_) => Ok(()),
            Route::Routed(route) => route.pool().await.map(drop),
        }
    }

    /// The client of the server calls go to now, to open dedicated connections to it.
    pub(crate) async fn node_client(&self) -> RedisResult<redis::Client> {
        match &self.route {
            Route::Fixed(pool) => Ok(pool.client.clone()),
            Route::Routed(route) => Ok(route.pool().await?.client.clone()),
        }
    }

    /// The clients of every primary: a cluster's all, else the one server calls go to.
    pub(crate) async fn primary_clients(&self) -> RedisResult<Vec<redis::Client>> {
        match &self.route {
            Route::Fixed(pool) => Ok(vec![pool.client.clone()]),
            Route::Routed(route) => route.primary_clients().await,
        }
    }

    /// Notes that a call on a dedicated connection failed with `e`: on a cluster, a lost
    /// connection, a redirect or a demoted primary means the slot may have moved, so the next
    /// call asks where it is; `true` then (the dedicated connection must go to the new
    /// primary too).
    pub(crate) fn note_failure(&self, e: &redis::RedisError) -> bool {
        match &self.route {
            Route::Routed(route) => route.note_failure(e),
            Route::Fixed(_) => false,
        }
    }

    /// Sends `request` where it belongs; server errors stay values.
    async fn request(&self, request: &Request<'_>) -> RedisResult<Vec<Value>> {
        match &self.route {
            Route::Fixed(pool) => pool.request(request).await,
            Route::Routed(route) => route.request(request).await,
        }
    }

    /// Sends the one command `write` puts in the request buffer, or `cmd()` where the direct
    /// path cannot go, and returns its reply; a server error is returned as an error.
    pub(crate) async fn call(
        &self,
        write: impl Fn(&mut Vec<u8>) + Sync,
        cmd: impl Fn() -> Cmd + Sync,
    ) -> RedisResult<Value> {
        let mut replies = self
            .request(&Request::One {
                write: &write,
                cmd: &cmd,
            })
            .await?;
        match replies.pop() {
            None => Err(direct::invalid_reply("no reply")),
            Some(reply) if holds_error(&reply) => reply.extract_error(),
            Some(reply) => Ok(reply),
        }
    }

    async fn command(&self, cmd: &Cmd) -> RedisResult<Value> {
        let reply = self
            .request(&Request::One {
                write: &|buf| cmd.write_packed_command(buf),
                cmd: &|| cmd.clone(),
            })
            .await
            .and_then(|mut replies| {
                replies
                    .pop()
                    .ok_or_else(|| direct::invalid_reply("no reply"))
            });
        match reply {
            Ok(Value::ServerError(refused)) if refused.code() == "NOPERM" => {
                Err(name_refused(refused.into(), cmd))
            }
            Err(e) => Err(name_refused(e, cmd)),
            ok => ok,
        }
    }

    async fn pipeline(
        &self,
        pipeline: &Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.request(&Request::Pipeline {
            pipeline,
            offset,
            count,
            waited: false,
        })
        .await
    }

    /// Sends `pipeline`, whose last command is `WAIT`, and returns its `count` replies
    /// (server errors stay values). `WAIT` blocks the connection it is sent on until the
    /// replicas confirm or its timeout passes, so the request never shares the pipelined
    /// connection with other calls: it takes a direct connection (see [`Pool::lease_any`]).
    pub(crate) async fn waited(
        &self,
        pipeline: &Pipeline,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.request(&Request::Pipeline {
            pipeline,
            offset: 0,
            count,
            waited: true,
        })
        .await
    }
}

impl Pool {
    /// The pool for `client`'s server; connections open on first use.
    fn new(client: redis::Client, max_direct: usize, response_timeout: Duration) -> Self {
        let info = client.get_connection_info();
        let target = Target::for_client(info);
        let link = ConnectionLog::new("redis connection", info.addr().to_string());
        let host = match info.addr() {
            redis::ConnectionAddr::Tcp(host, _) => host.clone(),
            #[cfg(feature = "tls")]
            redis::ConnectionAddr::TcpTls { host, .. } => host.clone(),
            _ => String::new(),
        };
        Self {
            link,
            host,
            client,
            target,
            max_direct,
            direct_count: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            idle: Mutex::new(Vec::new()),
            pipelined: Mutex::new(PipelinedSlot::Empty),
            shared: OnceCell::new(),
            response_timeout,
            fence: None,
        }
    }

    /// The pool, sending nothing once `fence` is passed.
    fn fenced(mut self, fence: Fence) -> Self {
        self.fence = Some(Arc::new(fence));
        self
    }

    /// `Ok` unless the pool's primary was switched since it was confirmed.
    fn check_fence(&self) -> RedisResult<()> {
        self.fence.as_ref().map_or(Ok(()), |fence| fence.check())
    }

    /// Opens the first connection, so that a wrong address, password or certificate shows.
    async fn open_first(&self) -> RedisResult<()> {
        match (&self.target, self.max_direct) {
            (Some(target), 1..) => {
                let first = DirectConnection::open(target, CONNECT_TIMEOUT).await?;
                self.direct_count.fetch_add(1, Ordering::AcqRel);
                self.lock_idle().push(first);
            }
            (Some(_), 0) => drop(self.pipelined().await?),
            _ => {
                // One plain attempt first: the manager retries its first connection with
                // backoff whatever the error, so a refused port, an untrusted certificate or a
                // wrong password would otherwise hang here a while.
                drop(self.client.get_multiplexed_async_connection().await?);
                self.shared().await?;
            }
        }
        Ok(())
    }

    /// Sends `request` on a direct, the pipelined or the multiplexed connection; server
    /// errors stay values, except in the skipped part of a pipeline (see below).
    async fn request(&self, request: &Request<'_>) -> RedisResult<Vec<Value>> {
        // Checked again right before each write, below; this covers the multiplexed path.
        self.check_fence()?;
        match *request {
            Request::One { write, cmd } => match self.exchange(1, write, false).await? {
                Some(replies) => Ok(replies),
                None => Ok(vec![self.shared_command(&cmd()).await?]),
            },
            Request::Pipeline {
                pipeline,
                offset,
                count,
                waited,
            } => {
                let write = |buf: &mut Vec<u8>| {
                    buf.extend_from_slice(&pipeline.get_packed_pipeline());
                };
                let Some(mut replies) = self.exchange(offset + count, &write, waited).await? else {
                    return self
                        .observed(async {
                            self.shared()
                                .await?
                                .req_packed_commands(pipeline, offset, count)
                                .await
                        })
                        .await;
                };
                // The replies skipped are a transaction's `OK` and `QUEUED`s: a command that
                // could not be queued answered with its error there, and that error explains
                // the transaction's failure better than `EXECABORT`.
                for skipped in replies.drain(..offset) {
                    skipped.extract_error()?;
                }
                Ok(replies)
            }
        }
    }

    /// Sends the packed request `write` puts in a buffer and reads `count` replies, on a
    /// direct connection or the pipelined one; `None` when there is no `target` (use the
    /// multiplexed connection).
    async fn exchange(
        &self,
        count: usize,
        write: &(dyn Fn(&mut Vec<u8>) + Sync),
        waited: bool,
    ) -> RedisResult<Option<Vec<Value>>> {
        if self.target.is_none() {
            return Ok(None);
        }
        self.observed(self.exchange_unobserved(count, write, waited))
            .await
    }

    /// Runs `call` on the connection, noting whether it works; while it is lost, the call is
    /// the attempt to reconnect and runs in a `reconnect` span.
    async fn observed<T>(&self, call: impl Future<Output = RedisResult<T>>) -> RedisResult<T> {
        let log = &self.link;
        if !log.is_down() {
            let result = call.await;
            link::observe(log, &result);
            return result;
        }
        let span = log.reconnect_span();
        let result = call.instrument(span.clone()).await;
        span.in_scope(|| link::observe(log, &result));
        result
    }

    /// Sends `cmd` on the multiplexed connection (TLS, RESP3), observed like the direct path.
    async fn shared_command(&self, cmd: &Cmd) -> RedisResult<Value> {
        self.observed(async { self.shared().await?.req_packed_command(cmd).await })
            .await
    }

    async fn exchange_unobserved(
        &self,
        count: usize,
        write: &(dyn Fn(&mut Vec<u8>) + Sync),
        waited: bool,
    ) -> RedisResult<Option<Vec<Value>>> {
        let pool = self;
        if pool.target.is_none() {
            return Ok(None);
        }
        let alone = pool.in_flight.fetch_add(1, Ordering::AcqRel) == 0;
        let _in_flight = InFlight(&pool.in_flight);
        let lease = if waited {
            Some(pool.lease_any().await?)
        } else if alone {
            pool.lease().await?
        } else {
            None
        };
        let Some(mut lease) = lease else {
            let pipelined = pool.pipelined().await?;
            return pipelined
                .exchange(count, pool.response_timeout, write)
                .await
                .map(Some);
        };
        if let Err(e) = pool.check_fence() {
            pool.give_back(lease);
            return Err(e);
        }
        let Some(con) = lease.con.as_mut() else {
            return Ok(None);
        };
        write(con.request_buffer());
        let replies = tokio::time::timeout(pool.response_timeout, con.exchange(count))
            .await
            .map_err(|_| direct::timed_out("waiting for Redis to answer"))??;
        if pool.direct_count.load(Ordering::Acquire) > pool.max_direct {
            // Opened past the cap for a `WAIT`: closed now (dropping the lease counts it out).
            drop(lease);
        } else {
            pool.give_back(lease);
        }
        Ok(Some(replies))
    }
}

/// `err` with `cmd`'s name and first key in it, when the server refused them for lack of
/// permission: Redis names neither the key nor, inside a reply about keys, the command.
fn name_refused(err: redis::RedisError, cmd: &Cmd) -> redis::RedisError {
    if err.code() != Some("NOPERM") {
        return err;
    }
    let mut args = cmd.args_iter().map(|arg| crate::error::arg_text(&arg));
    let command = args.next().flatten().unwrap_or_default();
    let key = args.next().flatten().unwrap_or_default();
    let detail = err.detail().unwrap_or_default();
    redis::RedisError::from((
        err.kind(),
        "NOPERM",
        format!("{detail} (command `{command}`, key `{key}`)"),
    ))
}

impl Pool {
    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<DirectConnection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle direct connection, a new one if the pool has room, or `None` (use the pipelined
    /// or the multiplexed connection).
    async fn lease(&self) -> RedisResult<Option<Lease<'_>>> {
        let Some(target) = &self.target else {
            return Ok(None);
        };
        loop {
            let idle = self.lock_idle().pop();
            let Some(con) = idle else { break };
            let lease = Lease {
                pool: self,
                con: Some(con),
            };
            if lease
                .con
                .as_ref()
                .is_some_and(DirectConnection::is_reusable)
            {
                return Ok(Some(lease));
            }
            // Closed by the server while idle: dropping the lease forgets it.
        }
        let reserved = self
            .direct_count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_direct).then_some(n + 1)
            })
            .is_ok();
        if !reserved {
            return Ok(None);
        }
        self.open_counted(target).await.map(Some)
    }

    /// A direct connection even when the pool has no room: an idle one, a new one within the
    /// cap, or else one more, closed after its call. For a request ending with `WAIT`, which
    /// must not block the pipelined connection the other calls share.
    async fn lease_any(&self) -> RedisResult<Lease<'_>> {
        if let Some(lease) = self.lease().await? {
            return Ok(lease);
        }
        let Some(target) = &self.target else {
            return Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "no direct connection over TLS or RESP3",
            )));
        };
        self.direct_count.fetch_add(1, Ordering::AcqRel);
        self.open_counted(target).await
    }

    /// A new direct connection to `target`, already counted in `direct_count` by the caller;
    /// the count is given back when it cannot be opened.
    async fn open_counted(&self, target: &Target) -> RedisResult<Lease<'_>> {
        match DirectConnection::open(target, CONNECT_TIMEOUT).await {
            Ok(con) => Ok(Lease {
                pool: self,
                con: Some(con),
            }),
            Err(e) => {
                self.direct_count.fetch_sub(1, Ordering::AcqRel);
                Err(e)
            }
        }
    }

    fn give_back(&self, mut lease: Lease<'_>) {
        if let Some(con) = lease.con.take() {
            self.lock_idle().push(con);
        }
    }

    /// The pipelined connection, opened on first use and again after it broke.
    ///
    /// A task opens it, not the call that needs it first: a call can be left pending
    /// mid-open (`add_jobs` polls its batches once and awaits them later), and the calls
    /// behind it must not wait on a future nobody polls.
    async fn pipelined(&self) -> RedisResult<Arc<Pipelined>> {
        let mut opening = {
            let mut slot = self.lock_pipelined();
            match &*slot {
                PipelinedSlot::Open(con) if !con.is_broken() => return Ok(Arc::clone(con)),
                PipelinedSlot::Opening(opening) => opening.clone(),
                _ => {
                    let Some(target) = self.target.clone() else {
                        return Err(redis::RedisError::from((
                            redis::ErrorKind::Client,
                            "no pipelined connection over TLS or RESP3",
                        )));
                    };
                    let (opened, opening) = watch::channel(None);
                    let fence = self.fence.clone();
                    tokio::spawn(async move {
                        let con = Pipelined::open(&target, CONNECT_TIMEOUT, fence).await;
                        opened.send_replace(Some(con.map(Arc::new)));
                    });
                    *slot = PipelinedSlot::Opening(opening.clone());
                    opening
                }
            }
        };
        let result = match opening.wait_for(Option::is_some).await {
            Ok(done) => done.clone().unwrap_or_else(|| Err(abandoned())),
            Err(_) => Err(abandoned()),
        };
        let mut slot = self.lock_pipelined();
        if matches!(&*slot, PipelinedSlot::Opening(_)) {
            *slot = match &result {
                Ok(con) if !con.is_broken() => PipelinedSlot::Open(Arc::clone(con)),
                _ => PipelinedSlot::Empty,
            };
        }
        result
    }

    fn lock_pipelined(&self) -> std::sync::MutexGuard<'_, PipelinedSlot> {
        self.pipelined
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The multiplexed connection, opened on first use.
    async fn shared(&self) -> RedisResult<ConnectionManager> {
        self.shared
            .get_or_try_init(|| {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_response_timeout(Some(self.response_timeout))
                    .set_number_of_retries(2);
                ConnectionManager::new_with_config(self.client.clone(), config)
            })
            .await
            .cloned()
    }
}

impl ConnectionLike for SharedConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(self.command(cmd))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(self.pipeline(pipeline, offset, count))
    }

    fn get_db(&self) -> i64 {
        match &self.route {
            Route::Fixed(pool) => pool.target.as_ref().map_or_else(
                || pool.client.get_connection_info().redis_settings().db(),
                Target::db,
            ),
            // A cluster has database 0 only; behind sentinels, the URL's.
            Route::Routed(route) => route.db(),
        }
    }
}

/// Whether `v` holds a server error at any depth, which [`Value::extract_error`] would turn
/// into an error. Checked first because `extract_error` rebuilds every array it walks: with
/// a job hash in each fetch reply, that was some 3,000 instructions per job for nothing.
fn holds_error(v: &Value) -> bool {
    match v {
        Value::ServerError(_) => true,
        Value::Array(items) | Value::Set(items) | Value::Push { data: items, .. } => {
            items.iter().any(holds_error)
        }
        Value::Map(pairs) => pairs.iter().any(|(k, v)| holds_error(k) || holds_error(v)),
        Value::Attribute { data, attributes } => {
            holds_error(data)
                || attributes
                    .iter()
                    .any(|(k, v)| holds_error(k) || holds_error(v))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use super::holds_error;

    #[test]
    fn holds_error_finds_a_nested_error_and_only_then() {
        let plain = Value::Array(vec![Value::Int(1), Value::Array(vec![Value::Nil])]);
        assert!(!holds_error(&plain));
        let nested = redis::parse_redis_value(b"*2\r\n:1\r\n*1\r\n-ERR no\r\n")
            .expect("an array holding an error reply");
        assert!(holds_error(&nested));
        assert!(nested.extract_error().is_err(), "what it predicts");
    }
}
