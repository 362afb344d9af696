//! A TCP proxy between a client under test and its server, with the faults a network has
//! (docs/RELIABILITY.md R7): added latency, and a partition that leaves connections half-open.
//!
//! During a partition every byte, on every connection, is dropped while the sockets stay
//! open: neither side hears a reset, as when a link or a NAT entry dies. Connections that
//! lived through a partition, or were opened during one, stay dead after [`Proxy::heal`];
//! only new ones work, so a client recovers only if it notices on its own (timeouts) and
//! reconnects.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

#[derive(Default)]
struct Faults {
    latency_ms: AtomicU64,
    partitioned: AtomicBool,
    /// Bumped by each partition: a connection born in an older epoch has lived through one.
    epoch: AtomicU64,
}

impl Faults {
    /// Whether a connection born in `epoch` (during a partition when `born_cut`) is dead.
    fn is_dead(&self, epoch: u64, born_cut: bool) -> bool {
        born_cut
            || self.partitioned.load(Ordering::SeqCst)
            || self.epoch.load(Ordering::SeqCst) != epoch
    }
}

/// A proxy on a free loopback port; dropping it stops every connection.
pub struct Proxy {
    port: u16,
    faults: Arc<Faults>,
    tasks: JoinSet<()>,
}

impl Proxy {
    /// Starts a proxy to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a port");
        let port = listener.local_addr().expect("local address").port();
        let faults = Arc::new(Faults::default());
        let mut tasks = JoinSet::new();
        tasks.spawn(accept(listener, upstream, Arc::clone(&faults)));
        Self {
            port,
            faults,
            tasks,
        }
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn redis_url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Delays every chunk by `latency`, in each direction.
    pub fn set_latency(&self, latency: Duration) {
        let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self.faults.latency_ms.store(ms, Ordering::SeqCst);
    }

    /// Cuts the network: from now on nothing gets through, and the sockets stay open.
    pub fn partition(&self) {
        self.faults.epoch.fetch_add(1, Ordering::SeqCst);
        self.faults.partitioned.store(true, Ordering::SeqCst);
    }

    /// Ends the partition for connections opened from now on.
    pub fn heal(&self) {
        self.faults.partitioned.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

async fn accept(listener: TcpListener, upstream: SocketAddr, faults: Arc<Faults>) {
    let mut connections = JoinSet::new();
    while let Ok((client, _)) = listener.accept().await {
        let epoch = faults.epoch.load(Ordering::SeqCst);
        let born_cut = faults.partitioned.load(Ordering::SeqCst);
        let Ok(server) = TcpStream::connect(upstream).await else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        let conn = Conn {
            faults: Arc::clone(&faults),
            epoch,
            born_cut,
        };
        connections.spawn(conn.clone().pump(client_read, server_write));
        connections.spawn(conn.pump(server_read, client_write));
    }
    // Dropping `connections` (when this task is aborted) stops every pump.
}

#[derive(Clone)]
struct Conn {
    faults: Arc<Faults>,
    epoch: u64,
    born_cut: bool,
}

impl Conn {
    /// Copies `from` to `to`, one chunk at a time, through the faults.
    async fn pump(self, mut from: OwnedReadHalf, mut to: OwnedWriteHalf) {
        let mut buf = vec![0; 64 * 1024];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let read_at = tokio::time::Instant::now();
            let latency = self.faults.latency_ms.load(Ordering::SeqCst);
            if latency > 0 {
                tokio::time::sleep_until(read_at + Duration::from_millis(latency)).await;
            }
            if self.faults.is_dead(self.epoch, self.born_cut) {
                continue;
            }
            if to.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        // A side that closes is passed on, unless the connection is dead: then nothing is.
        if !self.faults.is_dead(self.epoch, self.born_cut) {
            let _ = to.shutdown().await;
        } else {
            // Hold the other side open, as a half-open connection does, until the proxy goes.
            std::future::pending::<()>().await;
        }
    }
}
