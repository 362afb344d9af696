//! Every connection of the backend: the shared one its commands and scripts run on (this
//! module, with [`pool`] and [`route`]), the [dedicated](dedicated) ones blocking waits and
//! event reads run on, what they are opened from ([`options`], [`tls`]) and where they go
//! (standalone, [cluster], [sentinel]).
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
mod dedicated;
mod direct;
pub(crate) use direct::{invalid_reply, timed_out};
mod fence;
mod frame;
mod link;
mod multi_host;
mod options;
mod pipelined;
mod pool;
mod probe;
mod request;
mod resp;
mod route;
mod sentinel;
mod tls;

pub(crate) use cluster::{ClusterUrl, hash_tag, slot};
pub(crate) use dedicated::{ConnState, Dedicated};
pub use options::{
    DEFAULT_DIRECT_CONNECTIONS, DEFAULT_RESPONSE_TIMEOUT, RedisOptions, ReplicaWait,
};
pub(crate) use route::NodeClients;
pub(crate) use sentinel::SentinelUrl;

use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

use direct::Target;
use pool::Pool;
use request::Request;
use route::ClusterRoute;

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
