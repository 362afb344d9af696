//! Finding a store for the quick start: the URL in the environment, the local default when
//! something answers there, else (Redis only) a private `redis-server` of its own.

use std::fmt;
#[cfg(feature = "redis")]
use std::net::TcpListener;
use std::net::{TcpStream, ToSocketAddrs};
#[cfg(feature = "redis")]
use std::path::PathBuf;
#[cfg(feature = "redis")]
use std::process::{Child, Command, Stdio};
use std::time::Duration;
#[cfg(feature = "redis")]
use std::time::Instant;

/// Test-only: replaces the default URL (the test points it at a port where nothing runs).
pub(crate) const DEFAULT_URL_OVERRIDE: &str = "BULLMQ_QUICKSTART_DEFAULT_URL";

/// Why the quick start found no store; `Display` says what to do.
#[derive(Debug)]
pub(crate) enum StoreError {
    /// `redis-server` is not installed.
    #[cfg(feature = "redis")]
    NoRedisServer,
    /// The private `redis-server` could not be started.
    #[cfg(feature = "redis")]
    RedisServerFailed(String),
    /// Nothing answers at PostgreSQL's default URL.
    #[cfg(not(feature = "redis"))]
    NoPostgres { url: String, var: &'static str },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "redis")]
            Self::NoRedisServer => write!(
                f,
                "nothing answers at the default Redis URL and `redis-server` is not installed: \
                 install Redis (e.g. `apt install redis-server` or `brew install redis`), or set \
                 REDIS_URL to a running server"
            ),
            #[cfg(feature = "redis")]
            Self::RedisServerFailed(why) => write!(
                f,
                "nothing answers at the default Redis URL and a private redis-server did not \
                 start ({why}): start Redis yourself, or set REDIS_URL to a running server"
            ),
            #[cfg(not(feature = "redis"))]
            Self::NoPostgres { url, var } => write!(
                f,
                "nothing answers at {url}: start PostgreSQL there with a database `test` the \
                 user `postgres` may use (e.g. `createdb -U postgres test`), or set {var} to a \
                 running server (postgres://user:password@host:port/database)"
            ),
        }
    }
}

impl std::error::Error for StoreError {}

pub(crate) use crate::redact::redacted;

/// The default URL: the test-only override, else `default`.
pub(crate) fn default_url(default: &str) -> String {
    std::env::var(DEFAULT_URL_OVERRIDE).unwrap_or_else(|_| default.to_owned())
}

/// Whether something accepts TCP connections at the host and port of `url`.
pub(crate) fn answers(url: &str, default_port: u16) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let with_port = if host_port
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        host_port.to_owned()
    } else {
        format!("{host_port}:{default_port}")
    };
    with_port.to_socket_addrs().is_ok_and(|mut addrs| {
        addrs.any(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok())
    })
}

/// A `redis-server` of the quick start's own: a temporary directory, a free port, nothing
/// saved. Stopped, and its directory removed, when dropped.
#[cfg(feature = "redis")]
pub(crate) struct PrivateRedis {
    child: Child,
    dir: PathBuf,
    /// `redis://127.0.0.1:<port>`.
    pub(crate) url: String,
}

#[cfg(feature = "redis")]
impl PrivateRedis {
    /// Starts one and waits until it answers.
    pub(crate) async fn start() -> Result<Self, StoreError> {
        let failed = |what: &str, err: &dyn fmt::Display| {
            StoreError::RedisServerFailed(format!("{what}: {err}"))
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| failed("no free port", &e))?
            .port();
        let dir =
            std::env::temp_dir().join(format!("bullmq-quickstart-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| failed("no temporary directory", &e))?;
        let spawned = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(err) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(if err.kind() == std::io::ErrorKind::NotFound {
                    StoreError::NoRedisServer
                } else {
                    failed("cannot run redis-server", &err)
                });
            }
        };
        let mut server = Self {
            child,
            dir,
            url: format!("redis://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !answers(&server.url, port) {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(failed("redis-server exited", &status));
            }
            if Instant::now() > deadline {
                return Err(failed("redis-server", &"not answering after 10 s"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(server)
    }
}

#[cfg(feature = "redis")]
impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
