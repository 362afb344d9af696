//! The Redis backend of bullmq: one queue on one Redis, through Node.js BullMQ's own Lua
//! scripts, so that Rust and Node.js producers and workers share queues byte for byte.
//!
//! [`RedisBackend`] implements every section of `bullmq_core::backend::Backend`, each method on
//! the upstream script (or the plain commands) Node.js uses for it; `src/backend/<section>.rs`
//! mirrors `bullmq_core::backend::<section>`.
#![forbid(unsafe_code)]

mod backend;
mod connection;
mod error;
mod keys;
mod payload_limit;
mod replication;
mod reply;
mod script;
mod scripts;
mod server;
mod wire;

pub use backend::RedisBackend;
pub use connection::{
    DEFAULT_DIRECT_CONNECTIONS, DEFAULT_RESPONSE_TIMEOUT, RedisOptions, ReplicaWait,
};
pub use error::{RedisError, Refusal};
pub use server::{
    DatabaseType, MINIMUM_REDIS_VERSION, RECOMMENDED_REDIS_VERSION, ServerInfo,
    UnsupportedRedisVersion,
};

/// Internals that this repository's own tests and benchmarks reach: not part of the API, not
/// covered by semver, and free to change in any release.
#[doc(hidden)]
pub mod __private {
    /// Upstream's Lua scripts as embedded (`src/scripts.rs`).
    pub mod scripts {
        pub use crate::scripts::*;
    }

    /// The decoders of script and command replies (`src/reply.rs`), for the fuzz targets.
    pub mod reply {
        pub use crate::reply::*;
    }

    /// When the backend (behind Redis Sentinel) heard each `+switch-master` of its primary, or
    /// resubscribed to them (a switch may have gone unheard): from then on it sends nothing
    /// more to the old one. The last 16, oldest first; empty elsewhere.
    #[must_use]
    pub fn switches_heard(backend: &crate::RedisBackend) -> Vec<std::time::SystemTime> {
        backend.connection().switches_heard()
    }
}

// Every section of the contract is implemented: this stops compiling the day one is not.
const _: fn() = || {
    fn is_backend<B: bullmq_core::backend::Backend>() {}
    is_backend::<RedisBackend>();
};
