//! Shared helpers of the `admin`, `mutations` and `schedulers` tests: a queue under a unique
//! prefix on the real Redis, a stopped clock, raw reads of what the scripts wrote, and a guard
//! that deletes the prefix's keys when the test ends, also on panic.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};

use bullmq_core::clock::ManualClock;
use bullmq_core::{JobId, JobOptions, Queue};
use bullmq_redis::RedisBackend;

pub(crate) use super::T0;

pub(crate) use bullmq_test_support::{PrefixGuard, redis_url};

/// One queue of one test.
pub(crate) struct Ctx {
    pub(crate) backend: RedisBackend,
    pub(crate) queue: Queue<RedisBackend>,
    pub(crate) clock: ManualClock,
    pub(crate) prefix: String,
    pub(crate) name: String,
    con: std::cell::RefCell<redis::Connection>,
    _guard: PrefixGuard,
}

impl Ctx {
    pub(crate) async fn new() -> Self {
        let prefix = bullmq_test_support::unique_prefix();
        let guard = PrefixGuard(prefix.clone());
        let name = "q".to_owned();
        let clock = ManualClock::new(T0);
        let (backend, queue, con) = super::parts(&prefix, &name, &clock).await;
        Self {
            backend,
            queue,
            clock,
            prefix,
            name,
            con,
            _guard: guard,
        }
    }

    /// `<prefix>:<queue>:<part>`.
    pub(crate) fn key(&self, part: &str) -> String {
        format!("{}:{}:{part}", self.prefix, self.name)
    }

    /// `<prefix>:<queue>`.
    pub(crate) fn qualified_name(&self) -> String {
        format!("{}:{}", self.prefix, self.name)
    }

    /// Adds a job named `name` with data `{}` and default options; its id.
    pub(crate) async fn add_plain(&self, name: &str) -> JobId {
        self.add(name, JobOptions::new()).await
    }

    /// Adds a job named `name` with data `{}`; its id.
    pub(crate) async fn add(&self, name: &str, opts: JobOptions) -> JobId {
        self.add_data(name, &serde_json::json!({}), opts).await
    }

    /// Adds a job named `name` with `data`; its id.
    pub(crate) async fn add_data(
        &self,
        name: &str,
        data: &serde_json::Value,
        opts: JobOptions,
    ) -> JobId {
        self.queue
            .add(name, data, opts)
            .await
            .expect("add a job")
            .id
    }

    /// Runs a raw command on the test's own connection.
    pub(crate) fn cmd<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> T {
        cmd.query(&mut *self.con.borrow_mut())
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
    }

    pub(crate) fn hgetall(&self, part: &str) -> BTreeMap<String, String> {
        self.cmd(redis::cmd("HGETALL").arg(self.key(part)))
    }

    pub(crate) fn hget(&self, part: &str, field: &str) -> Option<String> {
        self.cmd(redis::cmd("HGET").arg(self.key(part)).arg(field))
    }

    pub(crate) fn exists(&self, part: &str) -> bool {
        self.cmd::<i64>(redis::cmd("EXISTS").arg(self.key(part))) == 1
    }

    pub(crate) fn list(&self, part: &str) -> Vec<String> {
        self.cmd(redis::cmd("LRANGE").arg(self.key(part)).arg(0).arg(-1))
    }

    pub(crate) fn zset(&self, part: &str) -> Vec<(String, f64)> {
        self.cmd(
            redis::cmd("ZRANGE")
                .arg(self.key(part))
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES"),
        )
    }

    pub(crate) fn zmembers(&self, part: &str) -> Vec<String> {
        self.zset(part).into_iter().map(|(m, _)| m).collect()
    }

    /// Every entry of the events stream, oldest first, as field maps.
    pub(crate) fn events(&self) -> Vec<HashMap<String, String>> {
        let reply: redis::streams::StreamRangeReply = self.cmd(
            redis::cmd("XRANGE")
                .arg(self.key("events"))
                .arg("-")
                .arg("+"),
        );
        reply
            .ids
            .into_iter()
            .map(|entry| {
                entry
                    .map
                    .into_iter()
                    .map(|(k, v)| (k, redis::from_redis_value(v).unwrap_or_default()))
                    .collect()
            })
            .collect()
    }

    /// Asserts that `id` is the only delayed job, due at `due` (the score packs it with 12 bits
    /// of ordering), and that the last `delayed` event announced it.
    pub(crate) fn assert_only_delayed_until(&self, id: &JobId, due: u64) {
        #[allow(clippy::cast_precision_loss)]
        let score = (due * 0x1000) as f64;
        assert_eq!(self.zset("delayed"), vec![(id.to_string(), score)]);
        let event = self.events_named("delayed").pop().expect("a delayed event");
        assert_eq!(event["jobId"], id.as_str());
        assert_eq!(event["delay"], due.to_string());
    }

    /// The events named `event`, oldest first.
    pub(crate) fn events_named(&self, event: &str) -> Vec<HashMap<String, String>> {
        self.events()
            .into_iter()
            .filter(|e| e.get("event").map(String::as_str) == Some(event))
            .collect()
    }

    /// Puts a waiting job into a finished set by hand, as `moveToFinished` leaves it.
    pub(crate) fn finish_by_hand(&self, id: &JobId, set: &str, finished_on: u64) {
        let job_key = self.key(id.as_str());
        self.cmd::<()>(
            redis::cmd("LREM")
                .arg(self.key("wait"))
                .arg(0)
                .arg(id.as_str()),
        );
        self.cmd::<()>(
            redis::cmd("ZADD")
                .arg(self.key(set))
                .arg(finished_on)
                .arg(id.as_str()),
        );
        self.cmd::<()>(
            redis::cmd("HSET")
                .arg(&job_key)
                .arg("finishedOn")
                .arg(finished_on)
                .arg("processedOn")
                .arg(finished_on),
        );
    }

    /// Moves a waiting job to `active` by hand, with a lock held by `token`.
    pub(crate) fn activate_by_hand(&self, id: &JobId, token: &str) {
        self.cmd::<()>(
            redis::cmd("LREM")
                .arg(self.key("wait"))
                .arg(0)
                .arg(id.as_str()),
        );
        self.cmd::<()>(redis::cmd("LPUSH").arg(self.key("active")).arg(id.as_str()));
        self.cmd::<()>(
            redis::cmd("SET")
                .arg(self.key(&format!("{id}:lock")))
                .arg(token)
                .arg("PX")
                .arg(30_000),
        );
    }
}
