//! What the PostgreSQL harnesses (`postgres_add`, `postgres_worker`) share: the server's URL,
//! a migrated schema of their own per run, PostgreSQL's CPU time and the JSON lines.
//! `benches/node/pg-measure.mjs` measures the same way for Node.js.
//!
//! PostgreSQL's CPU time is `utime + stime` of `/proc/<pid>/stat` (clock ticks, `USER_HZ` =
//! 100 on Linux) summed over the server processes that serve this harness: the backends of
//! this process's own connections (found by their client ports: this process's TCP sockets
//! to the server, matched against `pg_stat_activity.client_port`), the admin connection
//! measuring them excepted, plus the server's auxiliary processes (`pg_stat_activity` rows
//! whose `backend_type` is not `client backend`: WAL writer, checkpointer, background writer,
//! autovacuum). Backends of other clients are left out, so other users of a shared server
//! do not count, except through the auxiliary processes they also keep busy; a process that
//! exits during the measured stretch (none of ours does: the pools keep their connections)
//! is lost. The server must be local, reached over TCP.
//! Included by each harness with `#[path = "support/postgres.rs"] mod pg;` (not from
//! `support/mod.rs`, which the official port's harnesses include without sqlx).

#![allow(dead_code, unreachable_pub)]

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use bullmq_postgres::sqlx::{self, ConnectOptions as _, Connection as _, PgConnection};
use bullmq_postgres::{PostgresBackend, PostgresOptions, SchemaName};

use crate::support::jobs::QUEUE;
use crate::support::measure::{PerJob, per_job_fields, process_cpu};

/// `/proc/<pid>/stat`'s time unit: `USER_HZ`, 100 per second on every Linux ABI we run on.
const TICKS_PER_SEC: f64 = 100.0;

/// `DATABASE_URL`, else the local default (the tests' server).
pub use bullmq_test_support::database_url;

/// A schema no other run uses: `{harness}_{tag}_{pid}_{unix nanoseconds}`, the tag's `-` as
/// `_` (at most 63 characters for the harnesses' tags).
pub fn unique_schema(harness: &str, tag: &str) -> SchemaName {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos();
    let name = format!(
        "{harness}_{}_{}_{nanos}",
        tag.replace('-', "_"),
        std::process::id()
    );
    SchemaName::new(name).expect("a valid schema name")
}

/// Options for `schema` on the server, migrating it as the backend connects; with
/// `BENCH_PG_LISTEN=0`, waits poll instead of listening for notifications (to tell what the
/// `LISTEN` connection costs the server).
pub fn options(schema: &SchemaName) -> PostgresOptions {
    let listen = std::env::var("BENCH_PG_LISTEN").map_or(true, |v| v != "0");
    PostgresOptions::new(database_url())
        .schema(schema.clone())
        .migrate(true)
        .listen(listen)
}

/// A new backend (its own pool) for the benchmarks' queue in `schema`, migrating it.
pub async fn backend(schema: &SchemaName) -> PostgresBackend {
    let queue = bullmq_core::QueueName::new(QUEUE).expect("queue name");
    PostgresBackend::connect(&options(schema), queue)
        .await
        .expect("connect")
}

/// The connection a harness measures, checks and cleans up through (no schema pinned).
pub struct Admin {
    conn: PgConnection,
    /// Its own backend, which never counts.
    pid: i32,
}

impl Admin {
    /// Connects to [`database_url`].
    pub async fn connect() -> Self {
        let url = database_url();
        let options: sqlx::postgres::PgConnectOptions = url.parse().expect("DATABASE_URL");
        let mut conn = options
            .connect()
            .await
            .unwrap_or_else(|e| panic!("cannot connect to PostgreSQL at {url}: {e}"));
        let pid = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut conn)
            .await
            .expect("pg_backend_pid()");
        Self { conn, pid }
    }

    /// `SELECT count(*)` of `schema`'s jobs in `state` (a `job_state` label).
    pub async fn count(&mut self, schema: &SchemaName, state: &'static str) -> i64 {
        let sql = format!(
            "SELECT count(*) FROM {}.job WHERE state = '{state}'",
            schema.quoted()
        );
        sqlx::query_scalar(&sql)
            .fetch_one(&mut self.conn)
            .await
            .expect("count the jobs")
    }

    /// Whether `schema` still has a waiting or active job (each test on its partial index).
    pub async fn unfinished(&mut self, schema: &SchemaName) -> bool {
        let q = schema.quoted();
        let sql = format!(
            "SELECT EXISTS (SELECT 1 FROM {q}.job WHERE state = 'waiting')
                 OR EXISTS (SELECT 1 FROM {q}.job WHERE state = 'active')"
        );
        sqlx::query_scalar(&sql)
            .fetch_one(&mut self.conn)
            .await
            .expect("look for unfinished jobs")
    }

    /// Drops `schema` and everything in it.
    pub async fn drop_schema(&mut self, schema: &SchemaName) {
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", schema.quoted());
        sqlx::raw_sql(&sql)
            .execute(&mut self.conn)
            .await
            .expect("drop the schema");
    }

    /// The server processes that serve this process (see the module's doc): its connections'
    /// backends but the admin's, and the auxiliary processes.
    async fn serving_pids(&mut self) -> Vec<i32> {
        let ports = own_client_ports();
        sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity
              WHERE (client_port = ANY($1) AND pid <> $2)
                 OR backend_type <> 'client backend'",
        )
        .bind(ports)
        .bind(self.pid)
        .fetch_all(&mut self.conn)
        .await
        .expect("read pg_stat_activity")
    }

    /// Closes the connection.
    pub async fn close(self) {
        let _ = self.conn.close().await;
    }
}

/// The server's port in `DATABASE_URL`.
fn server_port() -> u16 {
    let options: sqlx::postgres::PgConnectOptions = database_url().parse().expect("DATABASE_URL");
    options.get_port()
}

/// The local ports of this process's TCP connections to the server's port: its sockets
/// (`/proc/self/fd` links `socket:[inode]`) looked up in `/proc/self/net/tcp{,6}`.
fn own_client_ports() -> Vec<i32> {
    let inodes: HashSet<String> = std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|entry| {
            let link = std::fs::read_link(entry.ok()?.path()).ok()?;
            let link = link.to_str()?;
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let server = server_port();
    let mut ports = Vec::new();
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(remote), Some(inode)) =
                (fields.get(1), fields.get(2), fields.get(9))
            else {
                continue;
            };
            let port = |addr: &str| {
                addr.rsplit_once(':')
                    .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
            };
            if port(remote) == Some(server) && inodes.contains(*inode) {
                ports.extend(port(local).map(i32::from));
            }
        }
    }
    ports
}

/// `utime + stime` (ticks) of every process named `postgres`, by pid.
fn postgres_ticks() -> HashMap<i32, u64> {
    let mut ticks = HashMap::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        // Gone in between, or not ours to read: skip it.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold spaces, so split after its `)`.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        if !head.ends_with("(postgres") {
            continue;
        }
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // After the `)`: state is field 3 of the man page, utime 14 and stime 15.
        let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<u64>().ok());
        if let (Some(utime), Some(stime)) = (field(14), field(15)) {
            ticks.insert(pid, utime + stime);
        }
    }
    ticks
}

/// The clocks read as a measured stretch starts.
pub struct Meter {
    ticks_before: HashMap<i32, u64>,
    cpu_before: Duration,
    start: Instant,
}

impl Meter {
    /// Reads PostgreSQL's processes, then this process's CPU, then starts the wall clock.
    pub fn start() -> Self {
        let ticks_before = postgres_ticks();
        let cpu_before = process_cpu();
        Self {
            ticks_before,
            cpu_before,
            start: Instant::now(),
        }
    }

    /// Stops the wall clock, then reads this process's CPU, then PostgreSQL's (the processes
    /// serving this one: a backend opened during the stretch counts from zero).
    pub async fn stop(self, admin: &mut Admin) -> Usage {
        let secs = self.start.elapsed().as_secs_f64();
        let cpu = (process_cpu() - self.cpu_before).as_secs_f64();
        let pids = admin.serving_pids().await;
        let ticks_after = postgres_ticks();
        let ticks: u64 = pids
            .iter()
            .filter_map(|pid| {
                let after = ticks_after.get(pid)?;
                Some(after.saturating_sub(self.ticks_before.get(pid).copied().unwrap_or(0)))
            })
            .sum();
        #[allow(clippy::cast_precision_loss)]
        let pg = ticks as f64 / TICKS_PER_SEC;
        Usage {
            secs,
            cpu,
            pg,
            processes: pids.len(),
        }
    }
}

/// What a measured stretch took, in seconds.
pub struct Usage {
    /// Wall time.
    pub secs: f64,
    /// This process's CPU time.
    pub cpu: f64,
    /// The CPU time of the PostgreSQL processes serving this one.
    pub pg: f64,
    /// How many PostgreSQL processes that was.
    pub processes: usize,
}

impl PerJob for Usage {
    /// `"secs":..,"jobs_per_sec":..,"client_cpu_us_per_job":..,"pg_cpu_us_per_job":..,"pg_processes":..`.
    fn per_job_fields(&self, jobs: u64) -> String {
        format!(
            r#"{},"pg_processes":{}"#,
            per_job_fields(jobs, self.secs, self.cpu, "pg", self.pg),
            self.processes,
        )
    }
}
