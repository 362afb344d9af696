//! Interoperability with Node.js BullMQ 6.7.6 (`tests/node`), on Redis and on PostgreSQL: what
//! one runtime writes, the other reads and runs, byte for byte; and the scripts, SQL and JSON
//! we build checked against what Node.js itself loads and writes. `mixed_fleet` runs the
//! previous release, 6.7.0 (`tests/node-6.7.0`), beside us, as in a fleet being upgraded.
//! Needs Node.js 20, `npm ci --prefix tests/node` and `npm ci --prefix tests/node-6.7.0`.

#![allow(unreachable_pub)]

use bullmq_test_support as support;

mod codec_golden;
mod corpus;
#[cfg(feature = "postgres")]
mod json;
mod json_numbers_golden;
#[cfg(all(feature = "postgres", feature = "flow"))]
mod mixed_fleet;
#[cfg(all(
    feature = "otel",
    feature = "postgres",
    feature = "flow",
    feature = "scheduler"
))]
mod otel;
#[cfg(all(
    feature = "otel",
    feature = "postgres",
    feature = "flow",
    feature = "scheduler"
))]
mod otel_shapes;
#[cfg(all(feature = "postgres", feature = "flow", feature = "scheduler"))]
mod postgres;
mod process_jobs;
mod redis_add;
mod redis_admin;
#[cfg(feature = "flow")]
mod redis_flow;
mod redis_node_worker;
mod redis_observability;
mod redis_queue_events;
#[cfg(feature = "scheduler")]
mod redis_scheduler;
mod redis_worker;
mod relay;
mod upstream;
