//! Handler tests: the dashboard's router driven with `oneshot` (no network), against the
//! real Redis and PostgreSQL, every case on both stores.
#![allow(clippy::unwrap_used, missing_docs, unreachable_pub)]

mod actions;
mod pages;
mod safety;
mod support;
