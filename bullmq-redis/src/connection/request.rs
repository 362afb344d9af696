//! [`Request`]: one command or one pipeline, in the forms each path of a connection sends it.

use redis::{Cmd, Pipeline};

/// One request, as each path sends it: written into a buffer (direct and pipelined paths), or
/// as redis-rs's types (the multiplexed path). The writers are `Fn`: a call redirected by a
/// cluster is written again.
pub(crate) enum Request<'a> {
    /// One command.
    One {
        write: &'a (dyn Fn(&mut Vec<u8>) + Sync),
        cmd: &'a (dyn Fn() -> Cmd + Sync),
    },
    /// A pipeline, of whose replies the `count` from `offset` on are wanted.
    Pipeline {
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
        /// The pipeline ends with `WAIT` (see [`crate::replication`]): it goes on a direct
        /// connection of its own, and only the replies before the `WAIT` tell a redirect.
        waited: bool,
    },
}

impl Request<'_> {
    /// Whether the request ends with `WAIT`.
    pub(crate) fn waited(&self) -> bool {
        matches!(self, Request::Pipeline { waited: true, .. })
    }
}
