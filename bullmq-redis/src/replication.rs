//! `WAIT` after a write: [`ReplicaWait`], the opt-in that has adds and finishing calls
//! confirmed by replicas before they return.
//!
//! Redis replicates asynchronously: a write the primary acknowledged may not have reached a
//! replica when the primary fails, and a failover then loses it (an add vanishes, a finished
//! job runs again). `WAIT n t` after the write, on the same connection, returns once `n`
//! replicas have it, or after `t` with how many do. The write is sent with its `WAIT` as one
//! request, so they share the connection (and the round trip).

use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, ServerErrorKind, Value};

use crate::connection::SharedConnection;
use crate::scripts::LuaScript;

/// How many replicas must confirm an add or a finishing call, and how long to wait for them;
/// see [`RedisOptions::wait_for_replicas`](crate::RedisOptions::wait_for_replicas).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaWait {
    /// Replicas that must have the write (`WAIT`'s first argument); at least 1.
    pub replicas: u32,
    /// How long to wait for them; greater than zero (`WAIT`'s 0 would wait for ever) and
    /// shorter than the response timeout.
    pub timeout: Duration,
}

impl ReplicaWait {
    /// `WAIT`'s timeout argument, in milliseconds (at least 1).
    fn millis(self) -> u64 {
        u64::try_from(self.timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

/// Runs one call of `script` (built by `command` as `verb head numkeys KEYS… ARGV…`) followed
/// by `WAIT`, as one request: `EVALSHA` first, `EVAL` on `NOSCRIPT`. Returns the script's reply
/// and how many replicas confirmed it.
pub(crate) async fn run_then_wait(
    con: &SharedConnection,
    script: &LuaScript,
    command: impl Fn(&str, &str) -> Cmd,
    wait: ReplicaWait,
) -> redis::RedisResult<(Value, i64)> {
    let call = |verb: &'static str, head: &'static str| {
        let mut pipe = redis::pipe();
        pipe.add_command(command(verb, head))
            .cmd("WAIT")
            .arg(wait.replicas)
            .arg(wait.millis());
        let mut con = con.clone();
        async move {
            let mut replies = con.req_packed_commands(&pipe, 0, 2).await?;
            let acked = replies.pop().map(Value::extract_error).transpose()?;
            let reply = replies
                .pop()
                .ok_or_else(|| crate::connection::invalid_reply("no reply"))?
                .extract_error()?;
            let Some(Value::Int(acked)) = acked else {
                return Err(crate::connection::invalid_reply("WAIT gave no count"));
            };
            Ok((reply, acked))
        }
    };
    match call("EVALSHA", script.sha1).await {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            call("EVAL", script.text).await
        }
        other => other,
    }
}

/// Appends `WAIT` to `pipe` (one more reply).
pub(crate) fn append_wait(pipe: &mut redis::Pipeline, wait: ReplicaWait) {
    pipe.cmd("WAIT").arg(wait.replicas).arg(wait.millis());
}

/// Whether `acked` replicas fall short of `wait`.
pub(crate) fn short_of(wait: ReplicaWait, acked: i64) -> bool {
    acked < i64::from(wait.replicas)
}

/// The error of a write the primary applied but fewer replicas than asked confirmed in time:
/// a failover now could lose it. Its code is `NOTREPLICATED`; see
/// [`RedisError::is_not_replicated`](crate::RedisError::is_not_replicated).
pub(crate) fn not_replicated(wait: ReplicaWait, acked: i64) -> redis::RedisError {
    redis::make_extension_error(
        NOT_REPLICATED.to_owned(),
        Some(format!(
            "the primary applied the write, but {acked} of the {} replicas asked confirmed it \
             within {:?}: a failover now could lose it (retrying under the same job id is safe)",
            wait.replicas, wait.timeout
        )),
    )
}

/// The code of [`not_replicated`].
pub(crate) const NOT_REPLICATED: &str = "NOTREPLICATED";
