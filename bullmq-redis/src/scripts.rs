//! Upstream's Lua scripts, embedded at build time.
//!
//! `build.rs` takes every top-level script of the pinned `bullmq` npm package
//! (`dist/cjs/commands/<name>-<keys>.lua`), resolves its `--- @include`
//! directives exactly as upstream does, and emits one constant per script,
//! named after it in `SCREAMING_SNAKE_CASE` (`moveToFinished-14.lua` →
//! [`MOVE_TO_FINISHED`]). Code that uses a script names its constant, so a script
//! renamed or dropped upstream becomes a compile error at the next pin bump.
//!
//! The text is byte-identical to what Node.js BullMQ sends, so both runtimes
//! share one entry in Redis's script cache (same [`LuaScript::sha1`]).

/// One upstream Lua script, ready to be sent to Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LuaScript {
    /// Upstream's command name, e.g. `moveToFinished`.
    pub name: &'static str,
    /// How many leading arguments are `KEYS`; the rest are `ARGV`.
    pub num_keys: usize,
    /// The script with its includes resolved, as upstream sends it.
    pub text: &'static str,
    /// SHA-1 of [`LuaScript::text`] in lowercase hex, as used by `EVALSHA`.
    pub sha1: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/scripts.rs"));
