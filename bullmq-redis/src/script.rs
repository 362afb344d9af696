//! Running upstream's Lua scripts: `EVALSHA` first, `EVAL` when Redis does not know the script.
//!
//! The text is upstream's, byte for byte, so the SHA1 is the one Node.js uses too: whichever
//! runtime loads a script first, the other finds it in Redis's script cache.

use redis::aio::ConnectionLike;
use redis::{Arg, Cmd, ErrorKind, ServerErrorKind, ToRedisArgs, Value};

use crate::connection::{SharedConnection, command};
use crate::scripts::LuaScript;

/// Arguments for one script call: its `KEYS`, then its `ARGV`, each list packed into one
/// buffer as it is given (a `Cmd` is just that: bytes plus argument boundaries), so that a call
/// costs a handful of allocations however many arguments it has.
#[derive(Debug)]
pub(crate) struct ScriptCall {
    keys: Cmd,
    args: Cmd,
}

/// Room reserved for a call's keys: the job scripts take up to 14 keys of some 20 to 80 bytes
/// each. Grown from empty, the two buffers were reallocated a dozen times per call (a tenth of
/// a worker's instructions per job); reserved, a call mostly makes its two allocations.
const KEYS_ROOM: (usize, usize) = (16, 1024);
/// Room reserved for a call's arguments (ids, timestamps, packed options).
const ARGS_ROOM: (usize, usize) = (16, 512);

impl Default for ScriptCall {
    fn default() -> Self {
        Self {
            keys: Cmd::with_capacity(KEYS_ROOM.0, KEYS_ROOM.1),
            args: Cmd::with_capacity(ARGS_ROOM.0, ARGS_ROOM.1),
        }
    }
}

impl ScriptCall {
    pub(crate) fn key(mut self, key: impl ToRedisArgs) -> Self {
        key.write_redis_args(&mut self.keys);
        self
    }

    /// The first key, to name in an error.
    pub(crate) fn first_key(&self) -> Option<String> {
        self.keys
            .args_iter()
            .next()
            .and_then(|arg| crate::error::arg_text(&arg))
    }

    pub(crate) fn arg(mut self, arg: impl ToRedisArgs) -> Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    fn command(&self, verb: &str, head: &str, script: &LuaScript) -> Cmd {
        let key_count = self.keys.args_iter().count();
        debug_assert_eq!(
            key_count, script.num_keys,
            "{} takes {} keys",
            script.name, script.num_keys
        );
        let parts = || {
            self.keys
                .args_iter()
                .chain(self.args.args_iter())
                .filter_map(|part| match part {
                    Arg::Simple(bytes) => Some(bytes),
                    _ => None,
                })
        };
        let (count, bytes) = parts().fold((3, verb.len() + head.len() + 4), |(n, b), part| {
            (n + 1, b + part.len())
        });
        let mut cmd = Cmd::with_capacity(count, bytes);
        cmd.arg(verb).arg(head).arg(key_count);
        for part in parts() {
            cmd.arg(part);
        }
        cmd
    }

    /// The `EVALSHA` command, for pipelines (after [`preload`]).
    pub(crate) fn evalsha(&self, script: &LuaScript) -> Cmd {
        self.command("EVALSHA", script.sha1, script)
    }

    /// Writes `verb head numkeys KEYS... ARGV...` straight into a request buffer.
    fn write(&self, buf: &mut Vec<u8>, verb: &str, head: &str) {
        let mut count = itoa::Buffer::new();
        let key_count = count.format(self.keys.args_iter().count());
        let parts = self
            .keys
            .args_iter()
            .chain(self.args.args_iter())
            .filter_map(|part| match part {
                Arg::Simple(bytes) => Some(bytes),
                _ => None,
            });
        let head = [verb.as_bytes(), head.as_bytes(), key_count.as_bytes()];
        command::write(buf, head.into_iter().chain(parts));
    }

    /// Runs the script followed by `WAIT` (see [`crate::replication`]): its reply and how
    /// many replicas confirmed it.
    pub(crate) async fn invoke_then_wait(
        &self,
        con: &SharedConnection,
        script: &LuaScript,
        wait: crate::connection::ReplicaWait,
    ) -> redis::RedisResult<(Value, i64)> {
        crate::replication::run_then_wait(
            con,
            script,
            |verb, head| self.command(verb, head, script),
            wait,
        )
        .await
    }

    /// Runs the script, loading it on `NOSCRIPT`.
    pub(crate) async fn invoke(
        &self,
        con: &SharedConnection,
        script: &LuaScript,
    ) -> redis::RedisResult<Value> {
        debug_assert_eq!(
            self.keys.args_iter().count(),
            script.num_keys,
            "{} takes {} keys",
            script.name,
            script.num_keys
        );
        run(
            con,
            script,
            |buf, verb, head| self.write(buf, verb, head),
            |verb, head| self.command(verb, head, script),
        )
        .await
    }
}

/// Runs one call of `script` on `con`: `EVALSHA` first, `EVAL` with the script's text when
/// Redis does not have it cached (`NOSCRIPT`). The call is given as `verb head numkeys KEYS...
/// ARGV...`, written straight into the request buffer by `write`, or built as a `Cmd` by
/// `command` where the direct path cannot go (TLS, RESP3).
pub(crate) async fn run(
    con: &SharedConnection,
    script: &LuaScript,
    write: impl Fn(&mut Vec<u8>, &str, &str) + Sync,
    command: impl Fn(&str, &str) -> Cmd + Sync,
) -> redis::RedisResult<Value> {
    let call = |verb: &'static str, head: &'static str| {
        con.call(|buf| write(buf, verb, head), || command(verb, head))
    };
    match call("EVALSHA", script.sha1).await {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            call("EVAL", script.text).await
        }
        other => other,
    }
}

/// Loads scripts into Redis's cache, so that a pipeline of `EVALSHA`s cannot meet `NOSCRIPT`.
pub(crate) async fn preload<C: ConnectionLike>(
    con: &mut C,
    scripts: &[&LuaScript],
) -> redis::RedisResult<()> {
    let mut pipe = redis::pipe();
    for s in scripts {
        pipe.cmd("SCRIPT").arg("LOAD").arg(s.text).ignore();
    }
    pipe.query_async(con).await
}
