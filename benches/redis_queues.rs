//! Throughput of N queues at once (one by default), on one standalone Redis or on a Redis
//! Cluster, with the CPU every server node spent: how a cluster compares with one server on
//! one queue, and how queues spread over its primaries add up.
//!
//! `benches/node/queues.mjs` (Node.js BullMQ 6.7.6, ioredis `Cluster` on a cluster) runs the
//! same modes on the same jobs and prints the same JSON lines; `benches/compare-cluster.sh`
//! starts the servers and runs both, interleaved, and prints the tables.
//!
//! Queue `k` is named `{qT}`, its hash tag `qT` chosen (on a cluster) so that queue `k` is on
//! primary `k mod P` of the `P` primaries, in the order of their first slot; on a standalone
//! server the tags are `q0`, `q1`…, so the keys are as long. The prefix is short and unique
//! per run (`bq<pid>x<run>`). Modes, each after an unmeasured warm-up on other queues:
//!
//! - `add`: each queue gets `BENCH_JOBS / N` jobs by `add_bulk` in chunks of 1,000, from one
//!   task per queue, all at once; the clock runs from the first add to the last reply;
//! - `worker`: the queues are pre-filled (not timed); then one worker per queue, at
//!   concurrency 100, each on its own backend, and the clock runs until every queue's `wait`
//!   and `active` lists are empty (polled every 2 ms on each queue's node).
//!
//! One line per mode:
//!
//! ```text
//! {"impl":"bullmq-rs","mode":"worker","queues":3,"jobs":..,"secs":..,"jobs_per_sec":..,
//!  "client_cpu_us_per_job":..,"server_cpu_us_per_job":..,"busiest_node_cpu_us_per_job":..,
//!  "nodes":6}
//! ```
//!
//! Server CPU is `used_cpu_sys + used_cpu_user` of `INFO cpu` on every node (replicas too: a
//! cluster's from `CLUSTER SLOTS`, a standalone server's from `INFO replication`), before and
//! after, once every replica has caught up with its primary (so that the filling's
//! replication is not counted); the busiest node's alone bounds the throughput where each
//! node has a core of its own (`1e6 / busiest` jobs/s). Client CPU is this process's.
//!
//! Run: `cargo bench --bench redis_queues [-- --mode add|worker]`; `-- --test` is the smoke
//! run (200 jobs, no warm-up). Env: `REDIS_URL` (`redis://127.0.0.1:6379`, or
//! `redis+cluster://host:port`: the first node named is asked for the others), `BENCH_QUEUES`
//! (1), `BENCH_JOBS` (20,000 over all queues), `BENCH_WARMUP` (2,000).

#[path = "support/mod.rs"]
mod support;

#[path = "support/ours.rs"]
mod ours;

use std::sync::atomic::{AtomicU64, Ordering};

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{ActiveJob, CancellationToken, JobOptions, ProcessResult};
use bullmq::{Prefix, Queue, QueueName, Worker, WorkerOptions};
use redis::Value;
use redis::aio::MultiplexedConnection;

use support::cli::{Args, env_u64, redis_url};
use support::measure::{
    admin, delete_prefix, info, info_number, per_job_fields, process_cpu, redis_cpu,
};
use support::worker::POLL;

const IMPL: &str = "bullmq-rs";
const MODES: [&str; 2] = ["add", "worker"];
/// Each queue's worker's concurrency.
const CONCURRENCY: usize = 100;

/// Runs of this process so far, for unique prefixes.
static RUNS: AtomicU64 = AtomicU64::new(0);

/// The servers: every node (to read their CPU), and for a cluster, which primary serves a
/// slot.
struct Servers {
    url: String,
    cluster: bool,
    /// `redis://host:port` of every node.
    nodes: Vec<String>,
    /// For a cluster: each primary's slot ranges, primaries in the order of their first slot.
    primaries: Vec<(String, Vec<(i64, i64)>)>,
    /// For a cluster: each replica, and its primary.
    replicas: Vec<(String, String)>,
}

impl Servers {
    async fn discover(url: String) -> Self {
        let Some(rest) = url.strip_prefix("redis+cluster://") else {
            // A standalone server's replicas (`slaveN:ip=…,port=…` of `INFO replication`).
            let mut con = admin(&url).await;
            let replicas: Vec<(String, String)> = info(&mut con, "replication")
                .await
                .lines()
                .filter(|l| l.starts_with("slave") && l.contains("ip="))
                .filter_map(|l| {
                    let field = |name: &str| {
                        l.split([':', ','])
                            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                    };
                    Some((
                        format!("redis://{}:{}", field("ip")?, field("port")?),
                        url.clone(),
                    ))
                })
                .collect();
            let mut nodes = vec![url.clone()];
            nodes.extend(replicas.iter().map(|(r, _)| r.clone()));
            return Self {
                nodes,
                url,
                cluster: false,
                primaries: Vec::new(),
                replicas,
            };
        };
        let seed = rest
            .split(',')
            .next()
            .expect("a node")
            .trim_end_matches('/');
        let seed_host = seed.rsplit_once(':').map_or(seed, |(host, _)| host);
        let mut con = admin(&format!("redis://{seed}")).await;
        let slots: Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut con)
            .await
            .expect("CLUSTER SLOTS");
        let mut primaries: Vec<(String, Vec<(i64, i64)>)> = Vec::new();
        let mut nodes = Vec::new();
        let mut replicas = Vec::new();
        let Value::Array(ranges) = slots else {
            panic!("CLUSTER SLOTS: {slots:?}")
        };
        for range in ranges {
            let Value::Array(parts) = range else { continue };
            let int = |v: &Value| match v {
                Value::Int(n) => *n,
                other => panic!("not a number: {other:?}"),
            };
            let (start, end) = (int(&parts[0]), int(&parts[1]));
            let addresses: Vec<String> = parts[2..]
                .iter()
                .map(|node| {
                    let Value::Array(node) = node else {
                        panic!("node {node:?}")
                    };
                    let host = match &node[0] {
                        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                        other => panic!("host {other:?}"),
                    };
                    // A node alone in its cluster does not know its own address.
                    let host = if host.is_empty() {
                        seed_host.to_owned()
                    } else {
                        host
                    };
                    format!("redis://{host}:{}", int(&node[1]))
                })
                .collect();
            for a in &addresses {
                if !nodes.contains(a) {
                    nodes.push(a.clone());
                }
            }
            let primary = addresses[0].clone();
            for replica in &addresses[1..] {
                let pair = (replica.clone(), primary.clone());
                if !replicas.contains(&pair) {
                    replicas.push(pair);
                }
            }
            match primaries.iter_mut().find(|(p, _)| *p == primary) {
                Some((_, r)) => r.push((start, end)),
                None => primaries.push((primary, vec![(start, end)])),
            }
        }
        primaries.sort_by_key(|(_, r)| r.iter().map(|(s, _)| *s).min());
        Self {
            url,
            cluster: true,
            nodes,
            primaries,
            replicas,
        }
    }

    /// The node serving `slot`.
    fn owner(&self, slot: i64) -> usize {
        self.primaries
            .iter()
            .position(|(_, r)| r.iter().any(|(s, e)| (*s..=*e).contains(&slot)))
            .expect("every slot served")
    }

    /// `n` hash tags, queue `k`'s on primary `k mod P`; and the URL of each one's node.
    async fn tags(&self, n: usize) -> Vec<(String, String)> {
        if !self.cluster {
            return (0..n)
                .map(|k| (format!("q{k}"), self.url.clone()))
                .collect();
        }
        let mut con = admin(&self.primaries[0].0).await;
        let mut chosen: Vec<(String, String)> = Vec::new();
        let mut candidate = 0;
        for k in 0..n {
            let want = k % self.primaries.len();
            loop {
                let tag = format!("q{candidate}");
                candidate += 1;
                let slot: i64 = redis::cmd("CLUSTER")
                    .arg("KEYSLOT")
                    .arg(&tag)
                    .query_async(&mut con)
                    .await
                    .expect("CLUSTER KEYSLOT");
                if self.owner(slot) == want {
                    chosen.push((tag, self.primaries[want].0.clone()));
                    break;
                }
            }
        }
        chosen
    }

    /// Waits until every replica has applied what its primary wrote so far (5 s at most), so
    /// that the filling's replication is not counted in the measured stretch.
    async fn settle(&self) {
        for (replica, primary) in &self.replicas {
            let mut r = admin(replica).await;
            let mut p = admin(primary).await;
            let target = repl_field(&mut p, "master_repl_offset").await;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while repl_field(&mut r, "slave_repl_offset").await < target
                && std::time::Instant::now() < deadline
            {
                tokio::time::sleep(POLL).await;
            }
        }
    }

    /// Every node's CPU so far, in seconds.
    async fn cpu(&self, cons: &mut [MultiplexedConnection]) -> Vec<f64> {
        let mut all = Vec::with_capacity(cons.len());
        for con in cons {
            all.push(redis_cpu(con).await);
        }
        all
    }
}

/// A number of `INFO replication`.
async fn repl_field(con: &mut MultiplexedConnection, field: &str) -> i64 {
    info_number(&info(con, "replication").await, field).unwrap_or(-1)
}

/// One queue of a run: its name, and a connection to its node.
struct Q {
    name: QueueName,
    node: MultiplexedConnection,
}

fn options(servers: &Servers, prefix: &str) -> RedisOptions {
    RedisOptions::new(servers.url.as_str()).prefix(Prefix::new(prefix).expect("prefix"))
}

async fn backend(servers: &Servers, prefix: &str, queue: &QueueName) -> RedisBackend {
    RedisBackend::connect(&options(servers, prefix), queue.clone())
        .await
        .expect("connect")
}

async fn add_bulk(queue: Queue<RedisBackend>, jobs: u64) {
    ours::add_bulk(&queue, jobs, &JobOptions::default()).await;
}

/// `LLEN wait` + `LLEN active` of every queue.
async fn unfinished(prefix: &str, queues: &mut [Q]) -> u64 {
    let mut total = 0;
    for q in queues {
        let (wait, active): (u64, u64) = redis::pipe()
            .cmd("LLEN")
            .arg(format!("{prefix}:{}:wait", q.name))
            .cmd("LLEN")
            .arg(format!("{prefix}:{}:active", q.name))
            .query_async(&mut q.node)
            .await
            .expect("LLEN");
        total += wait + active;
    }
    total
}

/// One run of `mode` on `n` queues with `jobs` jobs in all; the JSON fields it measured.
async fn run(
    servers: &Servers,
    cpus: &mut [MultiplexedConnection],
    mode: &str,
    n: usize,
    jobs: u64,
) -> String {
    let prefix = format!(
        "bq{}x{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    );
    let mut queues = Vec::new();
    for (tag, node) in servers.tags(n).await {
        queues.push(Q {
            name: QueueName::new(format!("{{{tag}}}")).expect("queue name"),
            node: admin(&node).await,
        });
    }
    let per_queue = jobs / n as u64;
    let mut handles = Vec::new();
    let before;
    let (cpu_before, start);
    let mut workers = Vec::new();
    if mode == "add" {
        let mut ready = Vec::new();
        for q in &queues {
            ready.push(
                Queue::try_new(q.name.clone(), backend(servers, &prefix, &q.name).await)
                    .expect("the backend is bound to this queue"),
            );
        }
        servers.settle().await;
        before = servers.cpu(cpus).await;
        cpu_before = process_cpu();
        start = std::time::Instant::now();
        for queue in ready {
            handles.push(tokio::spawn(add_bulk(queue, per_queue)));
        }
        for h in handles {
            h.await.expect("adding task");
        }
    } else {
        for q in &queues {
            add_bulk(
                Queue::try_new(q.name.clone(), backend(servers, &prefix, &q.name).await)
                    .expect("the backend is bound to this queue"),
                per_queue,
            )
            .await;
        }
        for q in &queues {
            let options = WorkerOptions::new().concurrency(CONCURRENCY).autorun(false);
            let worker = Worker::new(
                q.name.clone(),
                backend(servers, &prefix, &q.name).await,
                options,
                |_job: ActiveJob<RedisBackend>, _cancel: CancellationToken| async {
                    ProcessResult::Ok(serde_json::Value::Null)
                },
            )
            .await
            .expect("the worker");
            workers.push(worker);
        }
        servers.settle().await;
        before = servers.cpu(cpus).await;
        cpu_before = process_cpu();
        start = std::time::Instant::now();
        for w in &workers {
            w.run().expect("run the worker");
        }
        while unfinished(&prefix, &mut queues).await > 0 {
            tokio::time::sleep(POLL).await;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = (process_cpu() - cpu_before).as_secs_f64();
    let after = servers.cpu(cpus).await;
    for w in &workers {
        w.close().await;
    }
    let spent: Vec<f64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let server: f64 = spent.iter().sum();
    let busiest = spent.iter().copied().fold(0.0, f64::max);
    // Every job is where the mode leaves it: waiting after `add`, completed after `worker`.
    let list = if mode == "add" { "wait" } else { "completed" };
    let mut done = 0;
    for q in &mut queues {
        let key = format!("{prefix}:{}:{list}", q.name);
        let count: u64 = if mode == "add" {
            redis::cmd("LLEN").arg(&key).query_async(&mut q.node).await
        } else {
            redis::cmd("ZCARD").arg(&key).query_async(&mut q.node).await
        }
        .expect("count");
        done += count;
    }
    // Queue by queue: two queues on one node are in two slots, which one `UNLINK` refuses.
    for q in &mut queues {
        delete_prefix(&mut q.node, &format!("{prefix}:{}", q.name)).await;
    }
    let total = per_queue * n as u64;
    assert_eq!(done, total, "every job {list}");
    #[allow(clippy::cast_precision_loss)]
    let busiest_per_job = busiest * 1e6 / total as f64;
    format!(
        r#"{},"busiest_node_cpu_us_per_job":{busiest_per_job:.3},"nodes":{}"#,
        per_job_fields(total, secs, cpu, "server", server),
        servers.nodes.len()
    )
}

fn main() {
    let args = Args::parse();
    let (jobs, warmup) = if args.test {
        (200, 0)
    } else {
        let jobs = env_u64("BENCH_JOBS", 20_000);
        (jobs, env_u64("BENCH_WARMUP", 2_000.min(jobs)))
    };
    let n = usize::try_from(env_u64("BENCH_QUEUES", 1))
        .expect("queues")
        .max(1);
    let modes = args.modes_or(&MODES);
    support::cli::runtime(false).block_on(async {
        let servers = Servers::discover(redis_url()).await;
        let mut cpus = Vec::new();
        for node in &servers.nodes {
            cpus.push(admin(node).await);
        }
        for mode in &modes {
            assert!(
                MODES.contains(&mode.as_str()),
                "unknown mode {mode}: add, worker"
            );
            if warmup > 0 {
                run(&servers, &mut cpus, mode, n, warmup.max(n as u64)).await;
            }
            let fields = run(&servers, &mut cpus, mode, n, jobs).await;
            println!(
                r#"{{"impl":"{IMPL}","mode":"{mode}","queues":{n},"jobs":{},{fields}}}"#,
                jobs / n as u64 * n as u64
            );
        }
    });
}
