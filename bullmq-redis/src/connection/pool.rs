//! [`Pool`]: the connections to one server, and which of them a call takes (see the module
//! above for the three paths: direct, pipelined, multiplexed).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, RedisResult, Value};
use tokio::sync::{OnceCell, watch};
use tracing::Instrument;

use bullmq_core::telemetry::ConnectionLog;

use super::direct::{self, DirectConnection, Target};
use super::fence::Fence;
use super::link;
use super::pipelined::Pipelined;
use super::request::Request;

/// How long opening a connection may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The connections to one server.
pub(super) struct Pool {
    pub(super) client: redis::Client,
    /// The server's host, for a cluster's redirect that leaves it out.
    pub(super) host: String,
    /// `None` when the server is reached in a way the direct path does not speak (TLS, RESP3).
    pub(super) target: Option<Target>,
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
    pub(super) fence: Option<Arc<Fence>>,
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

impl Pool {
    /// The pool for `client`'s server; connections open on first use.
    pub(super) fn new(
        client: redis::Client,
        max_direct: usize,
        response_timeout: Duration,
    ) -> Self {
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
    pub(super) fn fenced(mut self, fence: Fence) -> Self {
        self.fence = Some(Arc::new(fence));
        self
    }

    /// `Ok` unless the pool's primary was switched since it was confirmed.
    fn check_fence(&self) -> RedisResult<()> {
        self.fence.as_ref().map_or(Ok(()), |fence| fence.check())
    }

    /// Opens the first connection, so that a wrong address, password or certificate shows.
    pub(super) async fn open_first(&self) -> RedisResult<()> {
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
    pub(super) async fn request(&self, request: &Request<'_>) -> RedisResult<Vec<Value>> {
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
    pub(super) async fn exchange(
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
    pub(super) async fn shared_command(&self, cmd: &Cmd) -> RedisResult<Value> {
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
