//! What the library records: metrics of a known workload, `tracing` spans and events on Redis,
//! connection loss and recovery logged on PostgreSQL. Interop of traces with Node.js is in
//! `tests/interop` (`otel`).

#![allow(unreachable_pub)]

use bullmq_test_support as support;

mod capture;
#[cfg(all(feature = "redis", feature = "flow", feature = "scheduler"))]
mod metrics;
#[cfg(feature = "postgres")]
mod postgres_logs;
mod redis_spans;
#[cfg(feature = "redis")]
mod scaling_metrics;
