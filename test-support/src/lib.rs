//! What the bullmq workspace's tests share, in one place:
//!
//! - the services: [`redis_url`], [`database_url`], and for each a connection that fails with
//!   what to do when the service is missing ([`redis()`], [`postgres::admin`]);
//! - unique names, so that tests run in parallel on one shared server: [`unique_prefix`] with
//!   its [`PrefixGuard`], [`postgres::SchemaGuard`];
//! - awaited conditions instead of fixed sleeps: [`eventually`], [`next_event`],
//!   [`blocked_in`];
//! - the pinned Node.js BullMQ ([`run_node`], [`node_dir`]);
//! - servers of a test's own, to kill, pause or cut off: [`PrivateRedis`],
//!   [`pg_cluster::Cluster`], the [`proxy::Proxy`]; and throwaway certificates ([`tls`]);
//! - other workspace executables a test runs ([`workspace_bin`]);
//! - what many tests say about jobs ([`script_code`], [`standard_flow_processor`],
//!   [`fill_failed`]), flows
//!   ([`flows`]) and job schedulers ([`scheduled`]);
//! - the chaos soaks' duration, seed and random sequence ([`soak`]), and their driver
//!   ([`chaos`]).
//!
//! Not published: only the workspace's tests, examples' tests and benchmarks use it.

#![forbid(unsafe_code)]
// Test helpers: a panic with a clear message is how they report a broken environment.
#![allow(clippy::missing_panics_doc, clippy::unwrap_used)]

/// Items built only where `$cfg` holds: one attribute for a group of modules instead of one
/// above each.
macro_rules! only_with {
    ($cfg:meta => $($item:item)*) => { $( #[cfg($cfg)] $item )* };
}

pub mod maps;
mod names;
mod node;
pub mod poll;
mod ports;
pub mod soak;
pub mod tls;
mod urls;
pub mod workspace_bin;

// What needs a store, either one.
only_with! { any(feature = "redis", feature = "postgres") =>
    pub mod bulk;
    pub mod chaos;
    pub mod counts;
    pub mod custom_events;
    pub mod delayed;
    pub mod events;
    pub mod failing;
    pub mod finishing;
    pub mod held;
    pub mod iterations;
    mod jobs;
    mod node_child;
    pub mod odd_jobs;
    pub mod only_completed;
    pub mod stall_order;
    pub mod stalled;
    pub mod wait;
    pub mod waiting;

    pub use jobs::{
        DEPENDENCY_KINDS, fill_failed, retry_later, script_code, standard_flow_processor, token,
    };
    pub use node_child::NodeChild;
    pub use wait::{eventually, next_event};
}

#[cfg(feature = "flow")]
pub mod flows;

only_with! { feature = "postgres" =>
    pub mod pg_cluster;
    mod pg_passwords;
    mod pg_queue;
    pub mod postgres;
}

only_with! { feature = "redis" =>
    mod private_redis;
    pub mod proxy;
    pub mod redis_cluster;
    mod redis_conn;
    pub mod redis_queue;
    pub mod scheduled;

    pub use private_redis::{PrivateRedis, kill_clients};
    pub use redis_conn::{PrefixGuard, blocked_in, clients_named, delete_prefix, redis};
    pub use wait::added_again;
}

pub use names::{now_ms, unique_name, unique_prefix};
pub use node::{
    PREVIOUS_NODE_PACKAGE, node_dir, previous_node_dir, run_node, run_node_args, run_node_in,
    run_node_json, run_node_json_in, workspace_dir,
};
pub use ports::free_port;
pub use urls::{database_url, redis_url};
