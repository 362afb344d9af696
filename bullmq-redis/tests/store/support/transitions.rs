//! Helpers of the `transitions` and `locks` tests: one queue under a fresh prefix on the real
//! Redis with a stopped clock, a worker-side shortcut to take jobs, raw reads of the keys the
//! scripts wrote, and a guard that removes the prefix's keys when the test ends, panics included.

// Each test file uses its own subset.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use bullmq_core::backend::{FetchParams, LockToken, NextJob, Transitions};
use bullmq_core::clock::ManualClock;
use bullmq_core::{Job, JobOptions, Prefix, Queue, QueueName};
use bullmq_redis::{RedisBackend, RedisOptions};

pub(crate) use super::T0;

/// The lock duration the tests take jobs with.
pub(crate) const LOCK: Duration = Duration::from_secs(30);

pub(crate) use bullmq_test_support::{PrefixGuard, redis_url};

/// One test's queue.
pub(crate) struct Ctx {
    pub backend: RedisBackend,
    pub queue: Queue<RedisBackend>,
    pub clock: ManualClock,
    prefix: String,
    con: RefCell<redis::Connection>,
    _cleanup: PrefixGuard,
}

/// Worker settings for taking jobs with `token`.
pub(crate) fn fetch(token: &str) -> FetchParams {
    FetchParams {
        token: LockToken::new(token),
        lock_duration: LOCK,
        limiter: None,
        worker_name: Some("w1".to_owned()),
    }
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
        let prefix = bullmq_test_support::unique_prefix();
        let cleanup = PrefixGuard(prefix.clone());
        let clock = ManualClock::new(T0);
        let options = RedisOptions::new(redis_url()).prefix(Prefix::new(&prefix).expect("prefix"));
        let name = QueueName::new("q").expect("queue name");
        let backend = RedisBackend::connect(&options, name.clone())
            .await
            .expect("connect to Redis")
            .with_clock(clock.clone());
        let queue =
            Queue::try_new(name, backend.clone()).expect("the backend is bound to this queue");
        let con = redis::Client::open(redis_url())
            .and_then(|c| c.get_connection())
            .expect("a sync connection");
        Self {
            backend,
            queue,
            clock,
            prefix,
            con: RefCell::new(con),
            _cleanup: cleanup,
        }
    }

    /// `<prefix>:q:<part>`.
    pub(crate) fn key(&self, part: &str) -> String {
        format!("{}:q:{part}", self.prefix)
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

    /// Runs a command on the test's own connection.
    pub(crate) fn cmd<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> T {
        cmd.query(&mut *self.con.borrow_mut())
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
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
