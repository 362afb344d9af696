//! What only the Redis backend has, through the facade: its connections, TLS, users and
//! refusals, flows across key prefixes, job methods read back as Node.js lays them out, and
//! worker behaviour tied to Redis keys. Behaviour every store shares is in `tests/conformance`.

#![allow(unreachable_pub)]

use bullmq_test_support as support;

mod connection;
#[cfg(feature = "flow")]
mod flow;
mod job_api;
mod odd_jobs;
mod payload_limit;
#[cfg(all(feature = "flow", feature = "scheduler"))]
mod security;
mod tls;
mod worker;
