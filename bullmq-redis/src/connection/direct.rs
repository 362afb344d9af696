//! One connection used by one caller at a time: the caller writes its command and reads the
//! reply itself, with no task in between.
//!
//! redis-rs's multiplexed connection hands every request to a driver task and the reply back
//! through a channel; for a latency-bound caller (one awaited `add` after another) those two
//! hops cost about as much as Redis's own work. A connection that is checked out by one caller
//! needs neither: the reply that comes next is that caller's.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use redis::{Cmd, ConnectionAddr, ConnectionInfo, ProtocolVersion, RedisError, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
#[cfg(unix)]
use tokio::net::UnixStream;

use super::frame;

/// How much room a read asks for at least.
pub(super) const READ_CHUNK: usize = 16 * 1024;

/// How long a connection whose request could not be written waits for the reply the server
/// may have sent before it closed (see [`DirectConnection::refusal_before_close`]).
pub(super) const REPLY_BEFORE_CLOSE: Duration = Duration::from_millis(500);

/// The reading direction of an open connection.
pub(super) type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;

/// The writing direction of an open connection.
pub(super) type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;

/// Where and how to open direct connections: the parts of a `redis::Client`'s settings that
/// the direct path supports (plain TCP or a Unix socket, RESP2).
#[derive(Clone)]
pub(super) struct Target {
    address: Address,
    username: Option<String>,
    password: Option<String>,
    db: i64,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password: only whether there is one.
        f.debug_struct("Target")
            .field("address", &self.address)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("db", &self.db)
            .finish()
    }
}

#[derive(Debug, Clone)]
enum Address {
    Tcp(String, u16),
    #[cfg(unix)]
    Unix(PathBuf),
}

impl Target {
    /// The target for `info`, or `None` when the direct path does not support it (TLS, RESP3):
    /// those go through redis-rs's multiplexed connection only.
    pub(super) fn for_client(info: &ConnectionInfo) -> Option<Self> {
        let settings = info.redis_settings();
        if settings.protocol() != ProtocolVersion::RESP2 {
            return None;
        }
        let address = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Address::Tcp(host.clone(), *port),
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => Address::Unix(path.clone()),
            _ => return None,
        };
        Some(Self {
            address,
            username: settings.username().map(str::to_owned),
            password: settings.password().map(str::to_owned),
            db: settings.db(),
        })
    }

    /// The database the connections select.
    pub(super) fn db(&self) -> i64 {
        self.db
    }
}

enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
}

impl Stream {
    async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.write_all(bytes).await,
            #[cfg(unix)]
            Self::Unix(s) => s.write_all(bytes).await,
        }
    }

    async fn read_into(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read_buf(buf).await,
            #[cfg(unix)]
            Self::Unix(s) => s.read_buf(buf).await,
        }
    }

    /// Reads without waiting: `WouldBlock` when nothing is there.
    fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.try_read(buf),
            #[cfg(unix)]
            Self::Unix(s) => s.try_read(buf),
        }
    }
}

/// An open connection, authenticated and on its database.
pub(super) struct DirectConnection {
    stream: Stream,
    /// Bytes read and not yet handed out as replies.
    read_buf: Vec<u8>,
    /// The request being written; kept to reuse its allocation.
    write_buf: Vec<u8>,
}

impl DirectConnection {
    /// Connects, authenticates and selects the database, within `timeout`.
    pub(super) async fn open(target: &Target, timeout: Duration) -> redis::RedisResult<Self> {
        let opening = async {
            let stream = match &target.address {
                Address::Tcp(host, port) => {
                    let tcp = TcpStream::connect((host.as_str(), *port)).await?;
                    // Requests are whole commands: send each at once.
                    tcp.set_nodelay(true)?;
                    Stream::Tcp(tcp)
                }
                #[cfg(unix)]
                Address::Unix(path) => Stream::Unix(UnixStream::connect(path).await?),
            };
            let mut con = Self {
                stream,
                read_buf: Vec::with_capacity(READ_CHUNK),
                write_buf: Vec::new(),
            };
            if let Some(password) = &target.password {
                let mut auth = redis::cmd("AUTH");
                if let Some(user) = &target.username {
                    auth.arg(user);
                }
                auth.arg(password);
                con.request(&auth).await?;
            }
            if target.db != 0 {
                con.request(redis::cmd("SELECT").arg(target.db)).await?;
            }
            if target.password.is_none() && target.db == 0 {
                // Nothing was asked yet: make sure that what listens speaks RESP (a TLS port
                // would take the connection and answer a command with garbage or not at all).
                con.request(&redis::cmd("PING")).await?;
            }
            Ok(con)
        };
        tokio::time::timeout(timeout, opening)
            .await
            .map_err(|_| timed_out("connecting to Redis"))?
    }

    /// Sends one command and reads its reply; a server error is returned as an error.
    async fn request(&mut self, cmd: &Cmd) -> redis::RedisResult<Value> {
        self.write_buf.clear();
        cmd.write_packed_command(&mut self.write_buf);
        let mut replies = self.exchange(1).await?;
        replies
            .pop()
            .map_or_else(|| Err(invalid_reply("no reply")), Value::extract_error)
    }

    /// The buffer to write the next request into (cleared).
    pub(super) fn request_buffer(&mut self) -> &mut Vec<u8> {
        self.write_buf.clear();
        &mut self.write_buf
    }

    /// Writes the request buffer and reads `count` replies, in order. Server errors stay
    /// values ([`Value::ServerError`]), as redis-rs's callers expect.
    pub(super) async fn exchange(&mut self, count: usize) -> redis::RedisResult<Vec<Value>> {
        if let Err(e) = self.stream.write_all(&self.write_buf).await {
            return Err(self
                .refusal_before_close()
                .await
                .unwrap_or_else(|| e.into()));
        }
        let mut replies = Vec::with_capacity(count);
        let mut start = 0;
        while replies.len() < count {
            match frame::take_reply(&self.read_buf[start..])? {
                Some((value, len)) => {
                    replies.push(value);
                    start += len;
                }
                None => {
                    self.read_buf.drain(..start);
                    start = 0;
                    self.read_buf.reserve(READ_CHUNK);
                    if self.stream.read_into(&mut self.read_buf).await? == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "Redis closed the connection",
                        )
                        .into());
                    }
                }
            }
        }
        self.read_buf.drain(..start);
        Ok(replies)
    }

    /// The error reply the server sent before it closed the connection under a request it
    /// would not take (a value above `proto-max-bulk-len`: "invalid bulk length"), when it
    /// is already here: it says why, where the write's own error only says "reset".
    /// It may still be on its way when the write fails: wait for it a moment (until the
    /// server's close ends the read, [`REPLY_BEFORE_CLOSE`] at most).
    async fn refusal_before_close(&mut self) -> Option<RedisError> {
        let deadline = tokio::time::Instant::now() + REPLY_BEFORE_CLOSE;
        loop {
            match frame::take_reply(&self.read_buf) {
                Ok(Some((reply @ Value::ServerError(_), _))) => return reply.extract_error().err(),
                Ok(None) => {}
                _ => return None,
            }
            self.read_buf.reserve(READ_CHUNK);
            let read = self.stream.read_into(&mut self.read_buf);
            match tokio::time::timeout_at(deadline, read).await {
                Ok(Ok(1..)) => {}
                _ => return None,
            }
        }
    }

    /// The connection's two directions, for a [pipelined](super::pipelined) connection.
    pub(super) fn into_halves(self) -> (ReadHalf, WriteHalf) {
        debug_assert!(
            self.read_buf.is_empty(),
            "unread bytes on a fresh connection"
        );
        match self.stream {
            Stream::Tcp(s) => {
                let (read, write) = s.into_split();
                (Box::new(read), Box::new(write))
            }
            #[cfg(unix)]
            Stream::Unix(s) => {
                let (read, write) = s.into_split();
                (Box::new(read), Box::new(write))
            }
        }
    }

    /// Whether the connection can take a request: the server has not closed it, and nothing
    /// unread is waiting (which would be a reply nobody asked for).
    pub(super) fn is_reusable(&self) -> bool {
        if !self.read_buf.is_empty() {
            return false;
        }
        let mut probe = [0_u8; 1];
        matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}

/// The error of a request that took longer than allowed.
pub(crate) fn timed_out(what: &'static str) -> RedisError {
    io::Error::new(io::ErrorKind::TimedOut, what).into()
}

/// The error of a reply that is not what was asked for.
pub(crate) fn invalid_reply(detail: &str) -> RedisError {
    RedisError::from((
        redis::ErrorKind::Parse,
        "invalid reply from the server",
        detail.to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::Target;

    #[test]
    fn debug_never_shows_the_password() {
        for url in [
            "redis://alice:s3cret@127.0.0.1:6379",
            "redis+unix:///tmp/r.sock?user=alice&pass=s3cret",
        ] {
            let client = redis::Client::open(url).expect("a valid URL");
            let target = Target::for_client(client.get_connection_info()).expect("direct");
            let shown = format!("{target:?}");
            assert!(
                !shown.contains("s3cret") && shown.contains("***"),
                "{shown}"
            );
        }
    }
}
