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

mod names;
mod node;
pub mod poll;
mod ports;
pub mod soak;
pub mod tls;
mod urls;
pub mod workspace_bin;

#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod bulk;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod chaos;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod counts;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod custom_events;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod delayed;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod events;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod failing;
#[cfg(feature = "flow")]
pub mod flows;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod held;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod iterations;
#[cfg(any(feature = "redis", feature = "postgres"))]
mod jobs;
pub mod maps;
#[cfg(any(feature = "redis", feature = "postgres"))]
mod node_child;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod odd_jobs;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod only_completed;

#[cfg(feature = "postgres")]
pub mod pg_cluster;
#[cfg(feature = "postgres")]
mod pg_passwords;
#[cfg(feature = "postgres")]
mod pg_queue;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
mod private_redis;
#[cfg(feature = "redis")]
pub mod proxy;
#[cfg(feature = "redis")]
pub mod redis_cluster;
#[cfg(feature = "redis")]
mod redis_conn;
#[cfg(feature = "redis")]
pub mod redis_queue;
#[cfg(feature = "redis")]
pub mod scheduled;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod stall_order;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod stalled;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod wait;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub mod waiting;

pub use names::{now_ms, unique_name, unique_prefix};
pub use node::{
    PREVIOUS_NODE_PACKAGE, node_dir, previous_node_dir, run_node, run_node_args, run_node_in,
    run_node_json, run_node_json_in, workspace_dir,
};
#[cfg(any(feature = "redis", feature = "postgres"))]
pub use node_child::NodeChild;
pub use ports::free_port;
pub use urls::{database_url, redis_url};

#[cfg(any(feature = "redis", feature = "postgres"))]
pub use jobs::{
    DEPENDENCY_KINDS, fill_failed, retry_later, script_code, standard_flow_processor, token,
};
#[cfg(feature = "redis")]
pub use private_redis::{PrivateRedis, kill_clients};
#[cfg(feature = "redis")]
pub use redis_conn::{PrefixGuard, blocked_in, clients_named, delete_prefix, redis};
#[cfg(feature = "redis")]
pub use wait::added_again;
#[cfg(any(feature = "redis", feature = "postgres"))]
pub use wait::{eventually, next_event};
