//! Faults, each on servers of the test's own (a private `redis-server`, a throwaway PostgreSQL
//! cluster, a proxy between client and server, worker processes of their own): servers killed,
//! restarted, paused, out of memory or read-only, connections cut, networks slowed or
//! partitioned. The shared servers are never disturbed.

#![allow(unreachable_pub)]

use bullmq_test_support as support;

#[cfg(feature = "redis")]
mod pool;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(all(feature = "postgres", feature = "redis"))]
mod postgres_soak;
mod redis_network;
mod redis_reliability;
#[cfg(feature = "redis")]
mod redis_worker;
