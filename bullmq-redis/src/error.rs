//! Redis failures as bullmq errors.

use std::fmt;

use bullmq_core::{BackendError, BackendErrorKind};

/// A failure of the Redis client or server; reach it through
/// `bullmq_core::Error::Backend(err)` and `err.downcast_ref::<RedisError>()`.
#[derive(Debug)]
pub struct RedisError {
    /// What bullmq was doing.
    pub context: &'static str,
    /// The client's error.
    pub source: redis::RedisError,
    /// The command sent (`BZPOPMIN`, `EVALSHA moveToActive`), when known.
    pub command: Option<String>,
    /// The (first) key it named, when known.
    pub key: Option<String>,
    /// The server bullmq could not connect to (its URL without password), for a connect
    /// failure.
    pub target: Option<String>,
    /// For a `NOTREPLICATED` error of an add (see [`Self::is_not_replicated`]): the ids the
    /// primary added the jobs under, in the order given (including ids Redis assigned). Adding
    /// again with these as custom ids does not add the jobs twice. Empty otherwise.
    pub job_ids: Vec<String>,
}

/// A refusal by the server that retrying on a new connection cannot fix; see
/// [`RedisError::refusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The ACL user may not run the command or touch the key (`NOPERM`).
    NoPermission,
    /// The server is at `maxmemory` with `noeviction` (`OOM`).
    OutOfMemory,
    /// The server is a read-only replica (`READONLY`).
    ReadOnly,
    /// The script is not in the server's cache and loading it failed (`NOSCRIPT`).
    NoScript,
    /// A value is larger than the server accepts (`proto-max-bulk-len`).
    PayloadTooLarge,
}

/// The code of the error of writes fewer replicas than asked confirmed in time (see
/// [`RedisError::is_not_replicated`]); `replication` builds it.
pub(crate) const NOT_REPLICATED: &str = "NOTREPLICATED";

impl RedisError {
    /// Whether the write was applied by the primary but fewer replicas than
    /// [`RedisOptions::wait_for_replicas`](crate::RedisOptions::wait_for_replicas) asked
    /// confirmed it in time (a failover now could lose it). Its kind is `Timeout`; retrying an
    /// add with the ids in [`Self::job_ids`] is safe (the job is not added twice).
    #[must_use]
    pub fn is_not_replicated(&self) -> bool {
        self.source.code() == Some(NOT_REPLICATED)
    }

    /// The refusal this is, if the server refused rather than the connection failing.
    #[must_use]
    pub fn refusal(&self) -> Option<Refusal> {
        let e = &self.source;
        let message = e.to_string();
        let code = e.code().unwrap_or_default();
        if code == "NOPERM" || message.contains("can't access at least one of the keys") {
            Some(Refusal::NoPermission)
        } else if code == "OOM" || message.contains("OOM command not allowed") {
            Some(Refusal::OutOfMemory)
        } else if code == "READONLY" || message.contains("READONLY") {
            Some(Refusal::ReadOnly)
        } else if code == "NOSCRIPT" {
            Some(Refusal::NoScript)
        } else if message.contains("invalid bulk length")
            || message.contains("string exceeds maximum allowed size")
        {
            Some(Refusal::PayloadTooLarge)
        } else {
            None
        }
    }
}

impl fmt::Display for RedisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(target) = &self.target {
            // A connect failure: where, why, and what to do.
            write!(f, "redis: cannot connect to {target}: {}", self.source)?;
            return f.write_str(connect_advice(&self.source));
        }
        write!(f, "redis: {}: {}", self.context, self.source)?;
        if self.refusal() == Some(Refusal::NoPermission) {
            // Redis names neither the key nor, inside a script, the command: we do (a single
            // command's error names them already, see `connection::name_refused`).
            if let Some(command) = &self.command {
                let key = self.key.as_deref().unwrap_or("?");
                write!(f, " (command `{command}`, key `{key}`)")?;
            }
            write!(
                f,
                ": the Redis user's ACL does not allow it; bullmq needs the commands and the \
                 key pattern `~<prefix>:*` of the ACL in docs/SECURITY.md"
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for RedisError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl BackendError for RedisError {
    fn kind(&self) -> BackendErrorKind {
        let e = &self.source;
        if self.is_not_replicated() {
            // Replicas did not confirm in time: the write itself went through.
            BackendErrorKind::Timeout
        } else if self.refusal().is_some() {
            // A refusal on a working connection: a new connection gets the same answer.
            BackendErrorKind::Server
        } else if e.is_timeout() {
            BackendErrorKind::Timeout
        } else if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
            BackendErrorKind::Connection
        } else if matches!(
            e.kind(),
            redis::ErrorKind::Server(_)
                | redis::ErrorKind::Extension
                | redis::ErrorKind::AuthenticationFailed
        ) {
            // A refused password is the server's answer, not a lost connection: retrying it
            // would only repeat the refusal. `Extension` is an error reply whose code the
            // client does not list (`WRONGPASS`, `NOPERM`, …).
            BackendErrorKind::Server
        } else if matches!(
            e.kind(),
            redis::ErrorKind::Parse | redis::ErrorKind::UnexpectedReturnType
        ) {
            BackendErrorKind::Protocol
        } else {
            BackendErrorKind::Other
        }
    }
}

/// Wraps a client error with what bullmq was doing.
pub(crate) fn wrap(context: &'static str) -> impl FnOnce(redis::RedisError) -> bullmq_core::Error {
    wrap_named(context, None, None)
}

/// [`wrap`] for `cmd`, whose name and first key the error then names.
pub(crate) fn wrap_cmd(
    context: &'static str,
    cmd: &redis::Cmd,
) -> impl FnOnce(redis::RedisError) -> bullmq_core::Error {
    let mut args = cmd.args_iter().map(|arg| arg_text(&arg));
    let command = args.next().flatten();
    let key = args.next().flatten();
    wrap_named(context, command, key)
}

/// A command's argument as text, to name in an error.
pub(crate) fn arg_text(arg: &redis::Arg<&[u8]>) -> Option<String> {
    match arg {
        redis::Arg::Simple(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        _ => None,
    }
}

/// [`wrap`] for a failure to connect to `target` (a URL without its password).
pub(crate) fn wrap_connect(target: String) -> impl FnOnce(redis::RedisError) -> bullmq_core::Error {
    move |source| {
        bullmq_core::Error::backend(RedisError {
            context: "connect",
            source,
            command: None,
            key: None,
            target: Some(target),
            job_ids: Vec::new(),
        })
    }
}

/// What to do about a failed connect, by its cause.
fn connect_advice(source: &redis::RedisError) -> &'static str {
    if matches!(source.kind(), redis::ErrorKind::AuthenticationFailed)
        || source.to_string().contains("WRONGPASS")
    {
        ". The server refused the credentials: check the user and password in the URL."
    } else if let Some(advice) = tls_advice(source) {
        advice
    } else if source.is_timeout() {
        ". Nothing answered in time: check the address, the network, and that the port is \
         Redis's (not another service's)."
    } else if source.is_io_error() || source.is_connection_refusal() {
        ". Is Redis running there? Start it (`redis-server`; install it with `apt-get install \
         redis-server`), or point the URL (REDIS_URL in the examples and tests) at a running \
         server."
    } else {
        "."
    }
}

/// The advice for a TLS failure (the server did answer, so "is Redis running" does not fit),
/// read from the rustls error inside when built with `tls`, or `None` for another cause.
fn tls_advice(source: &redis::RedisError) -> Option<&'static str> {
    let text = source.to_string();
    let unknown_ca = ". The server's certificate is not signed by a CA this client trusts: give \
                      the CA that signed it with `RedisOptions::ca_certificate` (the bundled \
                      public roots are used otherwise).";
    let name = ". The server's certificate is not for the host in the URL: connect by a name \
                the certificate lists.";
    let expired = ". The server's certificate has expired or is not valid yet.";
    let other = ". The TLS handshake failed: check that the port speaks TLS and the server's \
                 TLS settings (and, for a client certificate, that the server trusts it).";
    if text.contains("UnknownIssuer") || text.contains("BadSignature") {
        Some(unknown_ca)
    } else if text.contains("NotValidForName") {
        Some(name)
    } else if text.contains("Expired") || text.contains("NotValidYet") {
        Some(expired)
    } else if text.contains("invalid peer certificate")
        || text.contains("TLS")
        || text.contains("tls")
        || text.contains("handshake")
    {
        Some(other)
    } else {
        None
    }
}

/// [`wrap`] with the command and key the error names.
pub(crate) fn wrap_named(
    context: &'static str,
    command: Option<String>,
    key: Option<String>,
) -> impl FnOnce(redis::RedisError) -> bullmq_core::Error {
    move |source| {
        bullmq_core::Error::backend(RedisError {
            context,
            source,
            command,
            key,
            target: None,
            job_ids: Vec::new(),
        })
    }
}

/// [`wrap`] for an error about the jobs added under `job_ids`.
pub(crate) fn wrap_with_ids(
    context: &'static str,
    source: redis::RedisError,
    job_ids: Vec<String>,
) -> bullmq_core::Error {
    bullmq_core::Error::backend(RedisError {
        context,
        source,
        command: None,
        key: None,
        target: None,
        job_ids,
    })
}

/// A reply of a shape the scripts never produce.
pub(crate) fn unexpected(context: &'static str, found: &redis::Value) -> bullmq_core::Error {
    let source = redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "unexpected reply",
        format!("{found:?}"),
    ));
    wrap(context)(source)
}
