//! The jobs `tests/node/process-jobs.mjs` gives each outcome, added by Rust for a Node.js
//! worker to process.

use std::time::Duration;

use bullmq::redis::RedisBackend;
use bullmq::{Backoff, Job, JobOptions, Queue};
use serde_json::json;

/// One job of each name `process-jobs.mjs` knows, as added.
pub(crate) struct Outcomes {
    /// `ok` (`i` 21): completes with `{"double": 42}`.
    pub(crate) ok: Job,
    /// `progress`: reports progress, logs two lines and completes.
    pub(crate) progress: Job,
    /// `fail` (`i` 7, two attempts): fails both, `retry` apart.
    pub(crate) fail: Job,
    /// `fatal` (five attempts): fails unrecoverably on the first.
    pub(crate) fatal: Job,
}

/// Adds the four jobs, in that order.
pub(crate) async fn add_outcomes(queue: &Queue<RedisBackend>, retry: Duration) -> Outcomes {
    let add = |name: &'static str, data, opts| async move {
        queue.add(name, &data, opts).await.expect("add")
    };
    let retried = JobOptions::new().attempts(2).backoff(Backoff::fixed(retry));
    Outcomes {
        ok: add("ok", json!({"i": 21}), JobOptions::new()).await,
        progress: add("progress", json!({}), JobOptions::new()).await,
        fail: add("fail", json!({"i": 7}), retried).await,
        fatal: add("fatal", json!({}), JobOptions::new().attempts(5)).await,
    }
}
