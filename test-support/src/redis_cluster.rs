//! A private Redis Cluster for tests: six `redis-server --cluster-enabled yes` on free loopback
//! ports joined by `redis-cli --cluster create … --cluster-replicas 1` (three primaries, one
//! replica each), thrown away when the test process exits. Or, TLS only
//! ([`TestCluster::start_tls`]): three primaries on `--tls-port` alone, the cluster bus and
//! replication over TLS too, certificates from a private CA.
//!
//! Statics are never dropped, so the nodes are not children that die with a guard: a small
//! shell reaper started with the cluster waits for the test process to end, then SIGKILLs
//! every node it finds in `<dir>/pids` and removes the folder.

#![allow(clippy::unwrap_used, clippy::missing_panics_doc)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use crate as support;

/// One node of the cluster.
struct Node {
    port: u16,
    child: Option<Child>,
}

/// A running cluster.
pub struct TestCluster {
    /// Every node's port, in creation order (the first three were created primaries).
    pub ports: Vec<u16>,
    dir: PathBuf,
    /// Whether the nodes listen on TLS only (certificates in `dir`).
    tls: bool,
    nodes: Mutex<Vec<Node>>,
    /// `cluster-node-timeout` in milliseconds: a primary silent this long is failed over.
    node_timeout_ms: u64,
}

/// The cluster the tests of one binary share, started on first use. Nothing kills its nodes,
/// so it takes Redis's default node timeout (15 s): a node starved of CPU on a loaded machine
/// is not failed over, which would lose the writes its replica had not yet received.
pub fn shared() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| TestCluster::start_with_node_timeout(15_000))
}

/// [`shared`] for async tests: starting it blocks, so that runs off the runtime's threads.
pub async fn shared_in_task() -> &'static TestCluster {
    tokio::task::spawn_blocking(shared)
        .await
        .expect("start the shared cluster")
}

impl TestCluster {
    /// Starts six nodes and creates the cluster; waits until every node sees all slots served.
    /// A dead primary is failed over after 1.5 s, as fault tests want.
    pub fn start() -> Self {
        Self::start_with(false, 6, 1_500)
    }

    /// [`start`](Self::start) with `cluster-node-timeout` `node_timeout_ms`.
    pub fn start_with_node_timeout(node_timeout_ms: u64) -> Self {
        Self::start_with(false, 6, node_timeout_ms)
    }

    /// Starts three TLS-only primaries (no replica) and creates the cluster: `--port 0`,
    /// `--tls-port`, `--tls-cluster yes`, `--tls-replication yes`.
    pub fn start_tls() -> Self {
        Self::start_with(true, 3, 15_000)
    }

    fn start_with(tls: bool, count: usize, node_timeout_ms: u64) -> Self {
        let dir = std::env::temp_dir().join(format!("{}-cluster", support::unique_prefix()));
        std::fs::create_dir_all(&dir).unwrap();
        if tls {
            support::tls::make_test_certificates(&dir);
        }
        let mut nodes = Vec::new();
        for _ in 0..count {
            nodes.push(spawn_node(&dir, support::free_port(), tls, node_timeout_ms));
        }
        let cluster = Self {
            ports: nodes.iter().map(|n| n.port).collect(),
            dir,
            tls,
            nodes: Mutex::new(nodes),
            node_timeout_ms,
        };
        cluster.write_pids();
        start_reaper(&cluster.dir);
        let mut create = Command::new("redis-cli");
        if tls {
            create
                .arg("--tls")
                .arg("--cacert")
                .arg(cluster.dir.join("ca.crt"));
        }
        create.arg("--cluster").arg("create");
        for port in &cluster.ports {
            create.arg(format!("127.0.0.1:{port}"));
        }
        let out = create
            .args(["--cluster-replicas", if count == 6 { "1" } else { "0" }])
            .arg("--cluster-yes")
            .output()
            .unwrap_or_else(|e| panic!("cannot run redis-cli ({e}): install Redis 7"));
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.wait_healthy();
        cluster
    }

    /// `redis+cluster://127.0.0.1:<first>,127.0.0.1:<second>` (`rediss+cluster://` over
    /// TLS): two seeds, as a user would give.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!(
            "{scheme}+cluster://127.0.0.1:{},127.0.0.1:{}",
            self.ports[0], self.ports[1]
        )
    }

    /// The private CA's certificate (PEM) of a TLS cluster.
    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.dir.join("ca.crt")).unwrap()
    }

    /// Runs `redis-cli -p <port> args…` (over TLS on a TLS cluster) and returns its output.
    pub fn node_cli(&self, port: u16, args: &[&str]) -> String {
        let ca = self.dir.join("ca.crt");
        cli_with(self.tls.then_some(ca.as_path()), port, args)
    }

    /// A plain connection to the node on `port`.
    pub async fn node(port: u16) -> redis::aio::MultiplexedConnection {
        redis::Client::open(format!("redis://127.0.0.1:{port}"))
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// Runs `redis-cli -p <port> args…` against a plain node and returns its output.
    pub fn cli(port: u16, args: &[&str]) -> String {
        cli_with(None, port, args)
    }

    /// The port of the primary serving `key`'s slot, as the node on a live port says.
    pub fn owner_of(&self, key: &str) -> u16 {
        let slot: u16 = self
            .cli_any(&["CLUSTER", "KEYSLOT", key])
            .trim()
            .parse()
            .unwrap();
        self.owner_of_slot(slot)
    }

    /// The port of the primary serving `slot`.
    pub fn owner_of_slot(&self, slot: u16) -> u16 {
        let nodes = self.cli_any(&["CLUSTER", "NODES"]);
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 9 || !fields[2].contains("master") || fields[2].contains("fail") {
                continue;
            }
            let port = fields[1]
                .split('@')
                .next()
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse().ok())
                .unwrap();
            for range in &fields[8..] {
                let (start, end) = match range.split_once('-') {
                    Some((a, b)) => (a.parse().unwrap_or(u16::MAX), b.parse().unwrap_or(0)),
                    None => {
                        let one = range.parse().unwrap_or(u16::MAX);
                        (one, one)
                    }
                };
                if (start..=end).contains(&slot) {
                    return port;
                }
            }
        }
        panic!("no primary serves slot {slot}:\n{nodes}");
    }

    /// The port of a replica of the primary on `primary`.
    pub fn replica_of(&self, primary: u16) -> u16 {
        let id = self
            .node_cli(primary, &["CLUSTER", "MYID"])
            .trim()
            .to_owned();
        let nodes = self.cli_any(&["CLUSTER", "NODES"]);
        nodes
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 3 && f[2].contains("slave") && f[3] == id)
            .and_then(|f| {
                f[1].split('@')
                    .next()
                    .and_then(|a| a.rsplit(':').next())
                    .and_then(|p| p.parse().ok())
            })
            .unwrap_or_else(|| panic!("no replica of {primary}:\n{nodes}"))
    }

    /// The ports of the three primaries now.
    pub fn primaries(&self) -> Vec<u16> {
        (0..3)
            .map(|i| self.owner_of_slot(i * 5462))
            .collect::<Vec<_>>()
    }

    /// A hash tag (without braces) whose slot lies on each of the three primaries, with that
    /// primary's port.
    pub fn tags_on_every_primary(&self) -> Vec<(String, u16)> {
        let mut found: Vec<(String, u16)> = Vec::new();
        let unique = support::unique_prefix();
        for i in 0.. {
            let tag = format!("{unique}-{i}");
            let owner = self.owner_of(&format!("{{{tag}}}"));
            if found.iter().all(|(_, port)| *port != owner) {
                found.push((tag, owner));
            }
            if found.len() == 3 {
                break;
            }
        }
        found
    }

    /// `CLIENT KILL TYPE normal` on every live node: cuts every client connection (never the
    /// cluster bus or replication links); how many were cut.
    pub fn kill_clients(&self) -> u64 {
        self.alive()
            .into_iter()
            .map(|port| {
                self.node_cli(port, &["CLIENT", "KILL", "TYPE", "normal"])
                    .trim()
                    .parse::<u64>()
                    .unwrap_or(0)
            })
            .sum()
    }

    /// Waits until the replica on `replica` has applied every write its primary on `primary`
    /// had taken when called (its `slave_repl_offset` reaches the primary's
    /// `master_repl_offset`), so that a crash of the primary now loses none of them. Quick (a
    /// few round trips on open connections), so a caller can crash the primary right after.
    pub async fn wait_replicated(
        primary: &mut redis::aio::MultiplexedConnection,
        replica: &redis::aio::MultiplexedConnection,
    ) {
        async fn offset(con: &mut redis::aio::MultiplexedConnection, field: &str) -> u64 {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(con)
                .await
                .expect("INFO replication");
            info.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        }
        let target = offset(primary, "master_repl_offset:").await;
        crate::eventually("the replica caught up", Duration::from_secs(10), || {
            let mut replica = replica.clone();
            async move { offset(&mut replica, "slave_repl_offset:").await >= target }
        })
        .await;
    }

    /// Waits (blocking) until the replica of `primary` has every write `primary` took so far
    /// ([`wait_caught_up`]).
    pub fn wait_replica_caught_up(&self, primary: u16) {
        wait_caught_up(
            |port, args| self.node_cli(port, args),
            primary,
            self.replica_of(primary),
        );
    }

    /// The ports of the nodes not killed.
    fn alive(&self) -> Vec<u16> {
        self.nodes
            .lock()
            .unwrap()
            .iter()
            .filter(|n| n.child.is_some())
            .map(|n| n.port)
            .collect()
    }

    /// Runs `redis-cli` on the first node that is alive.
    fn cli_any(&self, args: &[&str]) -> String {
        for port in self.alive() {
            let out = self.node_cli(port, args);
            if !out.trim().is_empty() {
                return out;
            }
        }
        panic!("no node of the cluster answers");
    }

    /// Moves `slot` from the primary on `from` to the primary on `to` as `redis-cli --cluster
    /// reshard` does: `IMPORTING` on the target, `MIGRATING` on the source, `MIGRATE` of its
    /// keys in batches (calls meanwhile meet `ASK` and `TRYAGAIN`), then the slot assigned to
    /// the target on every node of `ports`. Returns how many keys moved.
    pub fn migrate_slot(ports: &[u16], slot: u16, from: u16, to: u16) -> usize {
        let id = |port: u16| Self::cli(port, &["CLUSTER", "MYID"]).trim().to_owned();
        let (from_id, to_id) = (id(from), id(to));
        let slot = slot.to_string();
        let ok = |out: String| assert!(out.contains("OK"), "{out}");
        ok(Self::cli(
            to,
            &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id],
        ));
        ok(Self::cli(
            from,
            &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id],
        ));
        let mut moved = 0;
        loop {
            let keys = Self::cli(from, &["CLUSTER", "GETKEYSINSLOT", &slot, "50"]);
            let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
            if keys.is_empty() {
                break;
            }
            let port = to.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(keys.iter().copied());
            let out = Self::cli(from, &args);
            assert!(
                out.contains("OK") || out.contains("NOKEY"),
                "MIGRATE: {out}"
            );
            moved += keys.len();
        }
        // The target first, then the source, then the others (replicas refuse: no matter).
        for port in [to, from].iter().chain(ports) {
            Self::cli(*port, &["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
        }
        moved
    }

    /// The slot of `key`.
    pub fn slot_of(&self, key: &str) -> u16 {
        self.cli_any(&["CLUSTER", "KEYSLOT", key])
            .trim()
            .parse()
            .unwrap()
    }

    /// SIGKILLs the node on `port` (a crash).
    pub fn kill(&self, port: u16) {
        let mut nodes = self.nodes.lock().unwrap();
        if let Some(node) = nodes.iter_mut().find(|n| n.port == port)
            && let Some(mut child) = node.child.take()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the killed node on `port` again with its cluster config (it rejoins, as a
    /// replica of whoever took over).
    pub fn restart(&self, port: u16) {
        {
            let mut nodes = self.nodes.lock().unwrap();
            if let Some(node) = nodes.iter_mut().find(|n| n.port == port) {
                *node = spawn_node(&self.dir, port, self.tls, self.node_timeout_ms);
            }
        }
        self.write_pids();
    }

    /// Waits until every live node reports `cluster_state:ok` and the same three primaries.
    pub fn wait_healthy(&self) {
        let healthy = || {
            let alive = self.alive();
            alive.iter().all(|port| {
                let info = self.node_cli(*port, &["CLUSTER", "INFO"]);
                let nodes = self.node_cli(*port, &["CLUSTER", "NODES"]);
                let replicas = nodes
                    .lines()
                    .filter(|l| l.contains("slave") && !l.contains("fail"))
                    .count();
                let replication = self.node_cli(*port, &["INFO", "replication"]);
                // Every primary has its replica, and a replica is in sync with its primary.
                info.contains("cluster_state:ok")
                    && info.contains("cluster_slots_ok:16384")
                    && replicas + 3 >= alive.len()
                    && (replication.contains("role:master")
                        || replication.contains("master_link_status:up"))
            })
        };
        crate::poll::poll_until(
            "the test cluster did not become healthy",
            Duration::from_secs(60),
            Duration::from_millis(200),
            healthy,
        );
    }
    fn write_pids(&self) {
        let pids: Vec<String> = self
            .nodes
            .lock()
            .unwrap()
            .iter()
            .filter_map(|n| n.child.as_ref().map(|c| c.id().to_string()))
            .collect();
        // Written whole then renamed, so the reaper never reads half a list.
        let tmp = self.dir.join("pids.tmp");
        std::fs::write(&tmp, pids.join(" ")).unwrap();
        std::fs::rename(tmp, self.dir.join("pids")).unwrap();
    }
}

/// Waits (blocking) until `replica` has every write `primary` took so far, compared by
/// replication offsets read with `cli`: a SIGKILL of the primary after it loses nothing to
/// asynchronous replication, so a fault test sees only what the client does.
pub fn wait_caught_up(cli: impl Fn(u16, &[&str]) -> String, primary: u16, replica: u16) {
    let offset = |port: u16, field: &str| -> u64 {
        cli(port, &["INFO", "replication"])
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let target = offset(primary, "master_repl_offset:");
    crate::poll::poll_until(
        &format!("the replica on {replica} did not catch up with {primary}"),
        Duration::from_secs(10),
        Duration::from_millis(20),
        || offset(replica, "slave_repl_offset:") >= target,
    );
}

/// Runs `redis-cli -p <port> args…`, over TLS trusting `ca` when given.
pub fn cli_with(ca: Option<&Path>, port: u16, args: &[&str]) -> String {
    let mut command = Command::new("redis-cli");
    if let Some(ca) = ca {
        command.arg("--tls").arg("--cacert").arg(ca);
    }
    let out = command
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Starts one cluster-enabled node on `port`, in its own folder under `dir` (TLS only, with the
/// certificates in `dir`, when `tls`), failed over when silent for `node_timeout_ms`; waits
/// until it accepts connections.
fn spawn_node(dir: &Path, port: u16, tls: bool, node_timeout_ms: u64) -> Node {
    let node_dir = dir.join(port.to_string());
    std::fs::create_dir_all(&node_dir).unwrap();
    let mut command = Command::new("redis-server");
    if tls {
        let file = |name: &str| dir.join(name).display().to_string();
        command
            .args(["--port", "0", "--tls-port", &port.to_string()])
            .args(["--tls-cluster", "yes", "--tls-replication", "yes"])
            .args(["--tls-auth-clients", "no"])
            .args(["--tls-cert-file", &file("server.crt")])
            .args(["--tls-key-file", &file("server.key")])
            .args(["--tls-ca-cert-file", &file("ca.crt")]);
    } else {
        command.args(["--port", &port.to_string()]);
    }
    command
        .args(["--save", "", "--appendonly", "no"])
        .args(["--cluster-enabled", "yes"])
        .args(["--cluster-config-file", "nodes.conf"])
        .args(["--cluster-node-timeout", &node_timeout_ms.to_string()])
        .args(["--bind", "127.0.0.1"])
        .arg("--dir")
        .arg(&node_dir);
    let child = start_until_ready(
        &mut command,
        &["Ready to accept connections"],
        &format!("cluster node on {port}"),
    );
    Node {
        port,
        child: Some(child),
    }
}

/// Spawns `command` (a `redis-server`) and waits until a line it prints holds one of `ready`;
/// if it ends first, kills it and panics with what it printed, naming it `what`.
pub fn start_until_ready(command: &mut Command, ready: &[&str], what: &str) -> Child {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start redis-server ({e}): install Redis 7"));
    let stdout = child.stdout.take().unwrap();
    let mut log = String::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
        let Ok(line) = line else { break };
        if ready.iter().any(|r| line.contains(r)) {
            return child;
        }
        log.push_str(&line);
        log.push('\n');
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("{what} did not start:\n{log}");
}

/// A shell that waits for this process to end, then kills the nodes listed in `<dir>/pids`
/// and removes `dir`. Never waited for: it outlives this process on purpose.
#[allow(clippy::zombie_processes)]
fn start_reaper(dir: &Path) {
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; \
         kill -9 $(cat '{dir}/pids') 2>/dev/null; rm -rf '{dir}'",
        pid = std::process::id(),
        dir = dir.display()
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
}

impl Drop for TestCluster {
    /// A cluster of one test (not the shared one, which statics never drop) goes with it.
    fn drop(&mut self) {
        let mut nodes = self
            .nodes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for node in nodes.iter_mut() {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
