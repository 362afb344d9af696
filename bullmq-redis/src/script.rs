//! Running upstream's Lua scripts: `EVALSHA` first, `EVAL` when Redis does not know the script.
//!
//! The text is upstream's, byte for byte, so the SHA1 is the one Node.js uses too: whichever
//! runtime loads a script first, the other finds it in Redis's script cache.

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, ServerErrorKind, ToRedisArgs, Value};

use crate::scripts::LuaScript;

/// Arguments for one script call: its `KEYS`, then its `ARGV`.
#[derive(Debug, Default)]
pub(crate) struct ScriptCall {
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall {
    pub(crate) fn key(mut self, key: impl ToRedisArgs) -> Self {
        self.keys.extend(key.to_redis_args());
        self
    }

    pub(crate) fn arg(mut self, arg: impl ToRedisArgs) -> Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    fn command(&self, verb: &str, head: &str, script: &LuaScript) -> Cmd {
        debug_assert_eq!(
            self.keys.len(),
            script.num_keys,
            "{} takes {} keys",
            script.name,
            script.num_keys
        );
        let mut cmd = redis::cmd(verb);
        cmd.arg(head)
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
    }

    /// The `EVALSHA` command, for pipelines (after [`preload`]).
    pub(crate) fn evalsha(&self, script: &LuaScript) -> Cmd {
        self.command("EVALSHA", script.sha1, script)
    }

    /// Runs the script, loading it on `NOSCRIPT`.
    pub(crate) async fn invoke<C: ConnectionLike>(
        &self,
        con: &mut C,
        script: &LuaScript,
    ) -> redis::RedisResult<Value> {
        match self.evalsha(script).query_async(con).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                self.command("EVAL", script.text, script)
                    .query_async(con)
                    .await
            }
            other => other,
        }
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
