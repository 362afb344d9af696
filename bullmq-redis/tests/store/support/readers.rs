//! Helpers of the `queries`, `meta`, `events`, `blocking` and `lifecycle` tests: one queue
//! under a fresh prefix on the real Redis with a stopped clock, raw commands on a connection
//! of the test's own, `CLIENT LIST` lookups, polling with a deadline, and a guard that removes
//! the prefix's keys when the test ends, panics included.

// Each test file uses its own subset.
#![allow(dead_code)]

use std::cell::RefCell;
use std::time::{Duration, Instant};

use bullmq_core::clock::ManualClock;
use bullmq_core::{Job, JobOptions, Prefix, Queue, QueueName};
use bullmq_redis::{RedisBackend, RedisOptions};

/// Where the stopped clock starts (2023-11-14T22:13:20Z).
pub(crate) const T0: u64 = 1_700_000_000_000;

pub(crate) fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A prefix no other test uses.
pub(crate) fn unique_prefix() -> String {
    format!("bullmq-test-{}", uuid::Uuid::new_v4().simple())
}

/// Removes every key of one prefix on drop.
pub(crate) struct Cleanup(pub(crate) String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(redis_url()) else {
            return;
        };
        let Ok(mut con) = client.get_connection() else {
            return;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}:*", self.0))
            .query(&mut con)
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(keys).query(&mut con);
        }
    }
}

/// A connected backend for `queue` under `prefix`, reading time from `clock`.
pub(crate) async fn backend(prefix: &str, queue: &str, clock: &ManualClock) -> RedisBackend {
    let options = RedisOptions::new(redis_url()).prefix(Prefix::new(prefix).expect("prefix"));
    RedisBackend::connect(&options, QueueName::new(queue).expect("queue name"))
        .await
        .expect("connect to Redis")
        .with_clock(clock.clone())
}

/// One test's queue (`q`).
pub(crate) struct Ctx {
    pub(crate) backend: RedisBackend,
    pub(crate) queue: Queue<RedisBackend>,
    pub(crate) clock: ManualClock,
    pub(crate) prefix: String,
    con: RefCell<redis::Connection>,
    _cleanup: Cleanup,
}

impl Ctx {
    pub(crate) async fn new() -> Self {
        Self::named("q").await
    }

    /// A context for a queue of another name.
    pub(crate) async fn named(queue: &str) -> Self {
        let prefix = unique_prefix();
        let cleanup = Cleanup(prefix.clone());
        let clock = ManualClock::new(T0);
        let backend = backend(&prefix, queue, &clock).await;
        let name = QueueName::new(queue).expect("queue name");
        let queue = Queue::new(name, backend.clone()).clock(clock.clone());
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

    /// Adds a job with data `{"n": n}`.
    pub(crate) async fn add(&self, n: u32, opts: JobOptions) -> Job {
        self.queue
            .add("job", &serde_json::json!({ "n": n }), opts)
            .await
            .expect("add a job")
    }

    /// Runs a command on the test's own connection.
    pub(crate) fn cmd<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> T {
        cmd.query(&mut *self.con.borrow_mut())
            .expect("a raw command")
    }

    /// Runs `name args…` on the test's own connection, ignoring the reply.
    pub(crate) fn exec(&self, name: &str, args: &[&str]) {
        let _: redis::Value = self.cmd(redis::cmd(name).arg(args));
    }
}

/// The `CLIENT LIST` lines of the clients named `name`.
pub(crate) fn clients_named(name: &str) -> Vec<String> {
    let mut con = redis::Client::open(redis_url())
        .and_then(|c| c.get_connection())
        .expect("a sync connection");
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(&mut con)
        .expect("CLIENT LIST");
    let wanted = format!(" name={name} ");
    list.lines()
        .filter(|l| l.contains(&wanted))
        .map(str::to_owned)
        .collect()
}

/// Polls `check` every 10 ms until it holds; panics with `what` after two seconds.
pub(crate) async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until a client named `name` is blocked in `command` (lower case, e.g. `bzpopmin`).
pub(crate) async fn blocked_in(name: &str, command: &str) {
    let wanted = format!(" cmd={command}");
    eventually(&format!("{name} blocks in {command}"), || {
        clients_named(name).iter().any(|l| l.contains(&wanted))
    })
    .await;
}
