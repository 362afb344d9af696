//! Helpers of the `queries`, `meta`, `events`, `blocking` and `lifecycle` tests: one queue
//! under a fresh prefix on the real Redis with a stopped clock and raw commands on a connection
//! of the test's own; `CLIENT LIST` lookups, awaited conditions and the prefix's guard come
//! from `bullmq-test-support`.

// Each test file uses its own subset.
#![allow(dead_code)]

use std::cell::RefCell;

use bullmq_core::clock::ManualClock;
use bullmq_core::{Job, JobOptions, Prefix, Queue, QueueName};
use bullmq_redis::{RedisBackend, RedisOptions};

pub(crate) use super::T0;

pub(crate) use bullmq_test_support::{
    PrefixGuard, blocked_in, clients_named, eventually, redis_url, unique_prefix,
};

/// A connected backend for `queue` under `prefix`, reading time from `clock`.
/// Asserts that `waiting` (a spawned `wait_for_job`) ends within 2 s (`why` it must) with the
/// marker an add leaves: member `0`, score 0.
pub(crate) async fn woken_by_an_add(
    waiting: tokio::task::JoinHandle<bullmq_core::Result<Option<bullmq_core::backend::Marker>>>,
    why: &str,
) {
    let woke = tokio::time::timeout(std::time::Duration::from_secs(2), waiting)
        .await
        .expect(why)
        .unwrap()
        .unwrap();
    let marker = bullmq_core::backend::Marker {
        member: "0".to_owned(),
        score: 0,
    };
    assert_eq!(woke, Some(marker));
}

/// `b.wait_for_job(timeout)` on a task of its own, so the test can act while it blocks.
pub(crate) fn spawn_wait(
    b: &RedisBackend,
    timeout: std::time::Duration,
) -> tokio::task::JoinHandle<bullmq_core::Result<Option<bullmq_core::backend::Marker>>> {
    let b = b.clone();
    tokio::spawn(async move {
        use bullmq_core::backend::Blocking as _;
        b.wait_for_job(timeout).await
    })
}

/// Asserts that `waiting` (a [`spawn_wait`]) ends within `within` (`why` it must) with no
/// marker: interrupted, not woken.
pub(crate) async fn interrupted<T: std::fmt::Debug + PartialEq>(
    waiting: tokio::task::JoinHandle<bullmq_core::Result<Option<T>>>,
    within: std::time::Duration,
    why: &str,
) {
    let outcome = tokio::time::timeout(within, waiting)
        .await
        .expect(why)
        .unwrap()
        .unwrap();
    assert_eq!(outcome, None);
}

/// Waits until Redis lists no client named `name`: `what` (a dropped connection) is gone.
pub(crate) async fn gone(name: &str, what: &str) {
    eventually(
        &format!("{what} is gone"),
        std::time::Duration::from_secs(10),
        || async { clients_named(name).await.is_empty() },
    )
    .await;
}

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
    _cleanup: PrefixGuard,
}

impl Ctx {
    pub(crate) async fn new() -> Self {
        Self::named("q").await
    }

    /// A context for a queue of another name.
    pub(crate) async fn named(queue: &str) -> Self {
        let prefix = unique_prefix();
        let cleanup = PrefixGuard(prefix.clone());
        let clock = ManualClock::new(T0);
        let (backend, queue, con) = super::parts(&prefix, queue, &clock).await;
        Self {
            backend,
            queue,
            clock,
            prefix,
            con,
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
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
    }

    /// Runs `name args…` on the test's own connection, ignoring the reply.
    pub(crate) fn exec(&self, name: &str, args: &[&str]) {
        let _: redis::Value = self.cmd(redis::cmd(name).arg(args));
    }
}
