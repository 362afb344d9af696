//! What the Redis backend writes and reads byte for byte: each `Backend` section's moves read
//! back from the keys, hash fields and event stream entries upstream's Lua scripts leave (and
//! read from keys laid out by hand as Node.js would leave them), the connection roles and
//! client names, and Node.js reading what Rust wrote.
//!
//! The behaviour every store shares is the conformance suite's (`tests/conformance/backend/`
//! at the workspace root, one generic case per behaviour run on Redis and PostgreSQL); these
//! cases pin what only Redis has, so a change to a key layout fails here. One binary for all
//! sections keeps link time and disk down.

#![allow(clippy::unwrap_used)]

mod support {
    //! The sections' shared contexts: a queue under a unique prefix with a stopped clock, raw
    //! commands on a connection of the test's own, and a guard that removes the prefix's keys.
    /// Where every context's stopped clock starts (2023-11-14T22:13:20Z).
    pub(crate) const T0: u64 = 1_700_000_000_000;

    pub(crate) mod queue_ops;
    pub(crate) mod readers;
    pub(crate) mod transitions;

    use std::cell::RefCell;

    use bullmq_core::clock::ManualClock;
    use bullmq_core::{Queue, QueueName};
    use bullmq_redis::RedisBackend;

    /// What every context holds: a backend for `queue` under `prefix` whose clock is `clock`,
    /// the queue on it, and a connection of the test's own for raw commands.
    pub(crate) async fn parts(
        prefix: &str,
        queue: &str,
        clock: &ManualClock,
    ) -> (
        RedisBackend,
        Queue<RedisBackend>,
        RefCell<redis::Connection>,
    ) {
        let backend = readers::backend(prefix, queue, clock).await;
        let queue = Queue::try_new(QueueName::new(queue).expect("queue name"), backend.clone())
            .expect("the backend is bound to this queue");
        let con = redis::Client::open(bullmq_test_support::redis_url())
            .and_then(|c| c.get_connection())
            .expect("a sync connection");
        (backend, queue, RefCell::new(con))
    }
}

mod admin;
mod blocking;
mod events;
mod lifecycle;
mod locks;
mod meta;
mod mutations;
mod queries;
mod relay;
mod schedulers;
mod transitions;
