//! `WAIT` after a write: [`ReplicaWait`], the opt-in that has adds and finishing calls
//! confirmed by replicas before they return.
//!
//! Redis replicates asynchronously: a write the primary acknowledged may not have reached a
//! replica when the primary fails, and a failover then loses it (an add vanishes, a finished
//! job runs again). `WAIT n t` after the write, on the same connection, returns once `n`
//! replicas have it, or after `t` with how many do. The write is sent with its `WAIT` as one
//! request, so they share the connection (and the round trip).

use redis::{Cmd, ErrorKind, ServerErrorKind, Value};

use crate::connection::{ReplicaWait, SharedConnection};
use crate::scripts::LuaScript;

/// Runs one call of `script` (built by `command` as `verb head numkeys KEYS… ARGV…`) followed
/// by `WAIT`, as one request on a direct connection of its own (`WAIT` blocks the connection
/// it is on): `EVALSHA` first, `EVAL` on `NOSCRIPT`. Returns the script's reply and how many
/// replicas confirmed it; the script's reply decides, so that a write that was applied is
/// never reported as failed because `WAIT` was refused (see [`acked`]).
pub(crate) async fn run_then_wait(
    con: &SharedConnection,
    script: &LuaScript,
    command: impl Fn(&str, &str) -> Cmd,
    wait: ReplicaWait,
) -> redis::RedisResult<(Value, i64)> {
    let call = |verb: &'static str, head: &'static str| {
        let mut pipe = redis::pipe();
        pipe.add_command(command(verb, head));
        append_wait(&mut pipe, wait);
        async move {
            let mut replies = con.waited(&pipe, 2).await?.into_iter();
            let reply = replies
                .next()
                .ok_or_else(|| crate::connection::invalid_reply("no reply"))?
                .extract_error()?;
            Ok::<_, redis::RedisError>((reply, acked(replies.next())))
        }
    };
    match call("EVALSHA", script.sha1).await {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            call("EVAL", script.text).await
        }
        other => other,
    }
}

/// How many replicas `WAIT`'s reply says confirmed the write: a refused `WAIT` (the node is
/// a replica, or the ACL denies `WAIT`) or a missing reply counts as none.
pub(crate) fn acked(reply: Option<Value>) -> i64 {
    match reply {
        Some(Value::Int(acked)) => acked,
        other => {
            tracing::warn!(
                reply = ?other,
                "redis: WAIT did not answer with a count; counting no replica as confirming"
            );
            0
        }
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

/// The error of adds the primary applied but fewer replicas than asked confirmed in time: a
/// failover now could lose them. Its code is `NOTREPLICATED` (see
/// [`RedisError::is_not_replicated`](crate::RedisError::is_not_replicated)), and it carries
/// the ids the jobs were added under, so that a retry reuses them rather than adding a job
/// twice (see [`RedisError::job_ids`](crate::RedisError::job_ids)).
pub(crate) fn not_replicated(
    context: &'static str,
    wait: ReplicaWait,
    acked: i64,
    job_ids: Vec<String>,
) -> bullmq_core::Error {
    let source = redis::make_extension_error(
        crate::error::NOT_REPLICATED.to_owned(),
        Some(format!(
            "the primary applied the write, but {acked} of the {} replicas asked confirmed it \
             within {:?}: a failover now could lose it (retrying with the same job ids, see \
             `RedisError::job_ids`, is safe)",
            wait.replicas, wait.timeout
        )),
    );
    crate::error::wrap_with_ids(context, source, job_ids)
}
