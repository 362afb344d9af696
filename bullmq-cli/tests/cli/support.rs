//! Running the built binary, and the stores it runs against.

use std::io::Write as _;
use std::process::{Command, Stdio};

use bullmq::{AnyBackend, ConnectOptions, Prefix, Queue, QueueName};
use bullmq_test_support::postgres::SchemaGuard;
use bullmq_test_support::{PrefixGuard, database_url, redis_url};
use serde_json::Value;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_bullmq");

/// What one run printed and how it exited.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Stdout as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// Stdout as JSON lines.
    pub fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    /// Asserts the exit code, showing everything when it differs.
    pub fn expect(self, code: i32) -> Self {
        assert_eq!(self.code, code, "exit code of {self:?}");
        self
    }
}

/// A command for the binary with none of the URL variables of the test environment.
pub fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("BULLMQ_URL")
        .env_remove("REDIS_URL")
        .env_remove("DATABASE_URL")
        .env_remove("BULLMQ_READ_ONLY")
        .env("NO_COLOR", "1");
    cmd
}

/// Runs `cmd` to the end with `input` on stdin.
pub fn finish(mut cmd: Command, input: Option<&str>) -> Out {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the binary starts");
    if let Some(input) = input {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        stdin
            .write_all(input.as_bytes())
            .expect("stdin takes the input");
    }
    let out = child.wait_with_output().expect("the binary ends");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    }
}

/// Runs the binary with `args` (stdin empty, not a terminal).
pub fn bullmq(args: &[&str]) -> Out {
    finish(command(args), None)
}

/// Which store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Redis,
    Postgres,
}

/// A store of the test's own: a fresh prefix on the test Redis, or a fresh (migrated)
/// schema on the test PostgreSQL, removed when dropped.
pub struct Store {
    pub kind: Kind,
    pub url: String,
    /// The prefix or the schema.
    pub ns: String,
    _redis: Option<PrefixGuard>,
    _postgres: Option<SchemaGuard>,
}

impl Store {
    pub async fn redis() -> Self {
        let guard = PrefixGuard::new();
        Self {
            kind: Kind::Redis,
            url: redis_url(),
            ns: guard.as_str().to_owned(),
            _redis: Some(guard),
            _postgres: None,
        }
    }

    pub async fn postgres() -> Self {
        let guard = SchemaGuard::new("cli");
        // Migrates the schema, as an application's first connection would.
        let backend = guard.backend("setup").await;
        drop(backend);
        Self {
            kind: Kind::Postgres,
            url: database_url(),
            ns: guard.as_str().to_owned(),
            _redis: None,
            _postgres: Some(guard),
        }
    }

    /// One store of each kind.
    pub async fn both() -> Vec<Self> {
        vec![Self::redis().await, Self::postgres().await]
    }

    /// `--url … --prefix|--schema …` and then `rest`.
    pub fn args<'a>(&'a self, rest: &[&'a str]) -> Vec<&'a str> {
        let ns = match self.kind {
            Kind::Redis => "--prefix",
            Kind::Postgres => "--schema",
        };
        let mut args = vec!["--url", self.url.as_str(), ns, self.ns.as_str()];
        args.extend_from_slice(rest);
        args
    }

    /// Runs the binary on this store.
    pub fn run(&self, rest: &[&str]) -> Out {
        bullmq(&self.args(rest))
    }

    /// Runs the binary on this store with `input` on stdin.
    pub fn run_with_input(&self, rest: &[&str], input: &str) -> Out {
        finish(command(&self.args(rest)), Some(input))
    }

    /// Runs the binary on this store with `rest` and `-o json`, which must succeed; its JSON
    /// answer.
    pub fn json(&self, rest: &[&str]) -> Value {
        self.run(&[rest, &["-o", "json"]].concat()).expect(0).json()
    }

    /// As [`Store::json`], with `input` on stdin.
    pub fn json_with_input(&self, rest: &[&str], input: &str) -> Value {
        self.run_with_input(&[rest, &["-o", "json"]].concat(), input)
            .expect(0)
            .json()
    }

    /// Starts the binary on this store with `rest`, stdin closed and stdout and stderr piped,
    /// for a command that runs until stopped or that a test reads while it runs.
    pub fn spawn(&self, rest: &[&str]) -> std::process::Child {
        command(&self.args(rest))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts")
    }

    /// A backend for queue `name` on this store.
    pub async fn backend(&self, name: &str) -> AnyBackend {
        let mut options = ConnectOptions::new(self.url.clone());
        options = match self.kind {
            Kind::Redis => options.prefix(Prefix::new(self.ns.clone()).expect("a valid prefix")),
            Kind::Postgres => options.schema(self.ns.clone()),
        };
        options.connect(name).await.expect("the store connects")
    }

    /// A queue `name` on this store.
    pub async fn queue(&self, name: &str) -> Queue<AnyBackend> {
        Queue::try_new(
            QueueName::new(name).expect("a valid name"),
            self.backend(name).await,
        )
        .expect("the backend is bound to this queue")
    }

    /// Adds a job with Node.js BullMQ 6.7 itself; returns its id.
    pub fn node_add(&self, queue: &str, name: &str, data: &str) -> String {
        match self.kind {
            Kind::Redis => {
                let id = bullmq_test_support::run_node_json(
                    &["queue-op.mjs", "add", name, data],
                    &[("PREFIX", self.ns.as_str()), ("QUEUE", queue)],
                );
                id.as_str().expect("a job id").to_owned()
            }
            Kind::Postgres => {
                let out = bullmq_test_support::run_node(
                    "pg-queue-op.mjs",
                    &[
                        ("SCHEMA", self.ns.as_str()),
                        ("QUEUE", queue),
                        ("OP", "add"),
                        ("JOB_NAME", name),
                        ("JOB_DATA", data),
                    ],
                );
                let v: Value = serde_json::from_str(out.trim()).expect("JSON from node");
                assert_eq!(v["ok"], true, "{v}");
                v["id"].as_str().expect("a job id").to_owned()
            }
        }
    }
}

/// A job's count in `state` of `queue`.
pub async fn count(queue: &Queue<AnyBackend>, state: bullmq::JobState) -> u64 {
    queue
        .get_job_count_by_types(&[bullmq::job::JobType::State(state)])
        .await
        .expect("counts")
}

/// The URL of the shared test Redis Cluster, started on first use (blocking, so off the
/// runtime's threads).
pub async fn cluster_url() -> String {
    bullmq_test_support::redis_cluster::shared_in_task()
        .await
        .url()
}
