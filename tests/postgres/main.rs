//! What only the PostgreSQL backend has, through the facade: live events under load, flows in
//! the caller's transaction, TLS and connect failures. Behaviour every store shares is in
//! `tests/conformance`; the backend's own tests are in `bullmq-postgres/tests`.

#![allow(unreachable_pub)]

use bullmq_test_support as support;

mod clock_skew;
mod events_load;
#[cfg(feature = "flow")]
mod flow_transaction;
mod odd_jobs;
mod security;
mod worker;
