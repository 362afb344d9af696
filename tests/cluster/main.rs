//! Redis Cluster and Sentinel (issue 16), each on private servers this binary starts on free
//! loopback ports (`redis-server`, `redis-cli`): routing and every class on a six-node cluster,
//! faults on it (failover, SIGKILL of a primary, a slot migrated while jobs flow), and a
//! sentinel-managed primary failing over. Never touches the shared Redis.

#![allow(clippy::unwrap_used, unreachable_pub)]

use bullmq_test_support as support;

mod counting;
mod faults;
mod relay_cluster;
mod relay_sentinel;
mod replica_wait;
#[cfg(all(feature = "flow", feature = "scheduler"))]
mod routing;
mod sentinel;
mod sentinel_interop;
mod sentinels;
mod soak;
mod switch;
#[cfg(feature = "tls")]
mod tls;
mod witness;

/// The tests that check a behaviour rather than count what a fault costs (interop, TLS, a
/// switch heard) run their private servers one at a time: on a 2-core machine, several more
/// deployments at once starve the fault tests beside them.
pub async fn one_at_a_time() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}
