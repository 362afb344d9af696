//! Helpers of the `transitions` and `locks` tests: one queue under a fresh prefix on the real
//! Redis with a stopped clock, a worker-side shortcut to take jobs, raw reads of the keys the
//! scripts wrote, and a guard that removes the prefix's keys when the test ends, panics included.

// Each test file uses its own subset.
#![allow(dead_code)]

use bullmq_test_support::held::fetch_params;
use std::collections::HashMap;
use std::time::Duration;

use bullmq_core::backend::{FetchParams, NextJob, Transitions};
use bullmq_core::{Job, JobOptions};

pub(crate) use super::T0;

/// The lock duration the tests take jobs with.
pub(crate) const LOCK: Duration = Duration::from_secs(30);

/// One test's queue: the readers' context (queue `q`, stopped clock, raw commands), with the
/// shortcuts of the moves' tests on top.
pub(crate) struct Ctx(super::readers::Ctx);

impl std::ops::Deref for Ctx {
    type Target = super::readers::Ctx;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// Worker settings for taking jobs with `token`.
pub(crate) fn fetch(token: &str) -> FetchParams {
    fetch_params(token, LOCK, Some("w1"))
}

/// The settings of the worker `fetch` describes, as its finishing moves send them.
pub(crate) fn worker_settings() -> std::sync::Arc<bullmq_core::backend::WorkerSettings> {
    std::sync::Arc::new(bullmq_core::backend::WorkerSettings {
        name: Some("w1".to_owned()),
        lock_duration: Some(LOCK),
        ..bullmq_core::backend::WorkerSettings::default()
    })
}

impl Ctx {
    pub(crate) async fn new() -> Self {
        Self(super::readers::Ctx::new().await)
    }

    /// Adds a job with empty data.
    pub(crate) async fn add(&self, name: &str, opts: JobOptions) -> Job {
        self.queue
            .add(name, &serde_json::json!({}), opts)
            .await
            .expect("add a job")
    }

    /// Takes the next job with `token`; panics when there is none or it cannot be read.
    pub(crate) async fn take(&self, token: &str) -> Job {
        let next: NextJob = self
            .backend
            .move_to_active(&fetch(token))
            .await
            .expect("move_to_active");
        next.job
            .expect("a job to take")
            .job
            .expect("a readable job")
    }

    /// A fresh queue whose one job, `name` added with `opts`, is taken with token `tok`;
    /// the job as added.
    pub(crate) async fn with_active(name: &str, opts: JobOptions) -> (Self, Job) {
        let ctx = Self::new().await;
        let job = ctx.add(name, opts).await;
        ctx.take("tok").await;
        (ctx, job)
    }

    /// A fresh queue with jobs "a" and "b" added in that order, "a" taken with token `tok`;
    /// both jobs as added.
    pub(crate) async fn with_two() -> (Self, Job, Job) {
        let ctx = Self::new().await;
        let first = ctx.add("a", JobOptions::new()).await;
        let second = ctx.add("b", JobOptions::new()).await;
        ctx.take("tok").await;
        (ctx, first, second)
    }

    /// The token in `id`'s lock key, if it has one.
    pub(crate) fn lock(&self, id: &str) -> Option<String> {
        self.get(&format!("{id}:lock"))
    }

    /// Whether `id`'s lock key exists.
    pub(crate) fn has_lock(&self, id: &str) -> bool {
        self.exists(&format!("{id}:lock"))
    }

    /// Deletes `<part>`, as an expiry or another client would.
    pub(crate) fn del(&self, part: &str) {
        self.cmd::<()>(redis::cmd("DEL").arg(self.key(part)));
    }

    /// Deletes `id`'s lock, as its expiry would when the worker died.
    pub(crate) fn drop_lock(&self, id: &str) {
        self.del(&format!("{id}:lock"));
    }

    pub(crate) fn hash(&self, part: &str) -> HashMap<String, String> {
        self.cmd(redis::cmd("HGETALL").arg(self.key(part)))
    }

    pub(crate) fn get(&self, part: &str) -> Option<String> {
        self.cmd(redis::cmd("GET").arg(self.key(part)))
    }

    pub(crate) fn pttl(&self, part: &str) -> i64 {
        self.cmd(redis::cmd("PTTL").arg(self.key(part)))
    }

    pub(crate) fn exists(&self, part: &str) -> bool {
        self.cmd::<i64>(redis::cmd("EXISTS").arg(self.key(part))) == 1
    }

    pub(crate) fn list(&self, part: &str) -> Vec<String> {
        self.cmd(redis::cmd("LRANGE").arg(self.key(part)).arg(0).arg(-1))
    }

    pub(crate) fn set(&self, part: &str) -> Vec<String> {
        let mut members: Vec<String> = self.cmd(redis::cmd("SMEMBERS").arg(self.key(part)));
        members.sort();
        members
    }

    /// A sorted set as `(member, score)`, lowest score first; scores are whole numbers here.
    pub(crate) fn zset(&self, part: &str) -> Vec<(String, u64)> {
        let flat: Vec<String> = self.cmd(
            redis::cmd("ZRANGE")
                .arg(self.key(part))
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES"),
        );
        flat.chunks_exact(2)
            .map(|p| (p[0].clone(), p[1].parse().expect("a whole score")))
            .collect()
    }

    /// The events stream, oldest first, each entry as its ordered `(field, value)` pairs.
    pub(crate) fn events(&self) -> Vec<Vec<(String, String)>> {
        let entries: Vec<(String, Vec<String>)> = self.cmd(
            redis::cmd("XRANGE")
                .arg(self.key("events"))
                .arg("-")
                .arg("+"),
        );
        entries
            .into_iter()
            .map(|(_, flat)| {
                flat.chunks_exact(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect()
            })
            .collect()
    }

    /// The newest events stream entry.
    pub(crate) fn last_event(&self) -> Vec<(String, String)> {
        self.events().pop().expect("an event")
    }

    /// Asserts that the newest events stream entry is the one a move writes: job `id` now
    /// `event`, previously `prev`, and nothing else.
    #[track_caller]
    pub(crate) fn assert_last_move(&self, event: &str, id: &str, prev: &str) {
        assert_eq!(
            self.last_event(),
            entry(&[("event", event), ("jobId", id), ("prev", prev)]),
            "the last event"
        );
    }

    /// The events named `name`, oldest first.
    pub(crate) fn events_named(&self, name: &str) -> Vec<Vec<(String, String)>> {
        self.events()
            .into_iter()
            .filter(|e| e.first().is_some_and(|(k, v)| k == "event" && v == name))
            .collect()
    }
}

/// An expected stream entry, for comparisons.
pub(crate) fn entry(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
