//! A sentinel-managed primary for the tests: a primary, its replica and three sentinels
//! (`redis-server --sentinel`) on free loopback ports, killed (and their folder removed) on
//! drop. Plain, or TLS only ([`Sentinels::start_tls`]): every node and sentinel listens on a
//! TLS port alone, replicates and monitors over TLS, with certificates a private CA signed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::Duration;

use crate::support;
use crate::support::redis_cluster::{cli_with, start_until_ready, wait_caught_up};

/// The master's name, as the sentinels know it.
pub const MASTER: &str = "mymaster";

/// A primary, a replica and three sentinels, killed (and their folder removed) on drop.
pub struct Sentinels {
    dir: PathBuf,
    pub primary: u16,
    pub replica: u16,
    pub sentinels: Vec<u16>,
    /// Whether everything listens on TLS only (certificates in `dir`).
    tls: bool,
    children: Mutex<HashMap<u16, Child>>,
}

impl Sentinels {
    /// Plain TCP.
    pub fn start() -> Self {
        Self::start_with(false, false, false)
    }

    /// Plain TCP; with `guarded`, the data nodes refuse writes while no replica follows them
    /// (`min-replicas-to-write 1`).
    pub fn start_guarded(guarded: bool) -> Self {
        Self::start_with(false, false, guarded)
    }

    /// Plain TCP, and the first primary refuses `REPLICAOF`: the sentinels can switch away
    /// from it but never demote it, so it keeps taking writes (never `READONLY`), and a client
    /// that writes to the new primary after a switch can only have heard of it from the
    /// sentinels' `+switch-master`.
    pub fn start_undemotable() -> Self {
        Self::start_with(false, true, false)
    }

    /// As [`Sentinels::start_undemotable`], TLS only: `--port 0`, `--tls-port`, replication
    /// and monitoring over TLS.
    pub fn start_tls_undemotable() -> Self {
        Self::start_with(true, true, false)
    }

    fn start_with(tls: bool, undemotable: bool, guarded: bool) -> Self {
        let dir = std::env::temp_dir().join(format!("{}-sentinel", support::unique_prefix()));
        std::fs::create_dir_all(&dir).unwrap();
        if tls {
            support::tls::make_test_certificates(&dir);
        }
        let certs = tls.then_some(dir.as_path());
        let (primary, replica) = (support::free_port(), support::free_port());
        let mut children = HashMap::new();
        let mut primary_args = data_node_args(primary, None, certs, guarded);
        if undemotable {
            for command in ["REPLICAOF", "SLAVEOF"] {
                primary_args.extend(["--rename-command".into(), command.into(), String::new()]);
            }
        }
        children.insert(primary, spawn(&dir, &primary_args));
        children.insert(
            replica,
            spawn(
                &dir,
                &data_node_args(replica, Some(primary), certs, guarded),
            ),
        );
        let mut sentinels = Vec::new();
        for _ in 0..3 {
            let port = support::free_port();
            let conf = dir.join(format!("sentinel-{port}.conf"));
            let listen = if tls {
                format!(
                    "port 0\ntls-port {port}\ntls-replication yes\ntls-auth-clients no\n\
                     tls-cert-file server.crt\ntls-key-file server.key\ntls-ca-cert-file ca.crt\n"
                )
            } else {
                format!("port {port}\n")
            };
            std::fs::write(
                &conf,
                format!(
                    "{listen}bind 127.0.0.1\nsentinel monitor {MASTER} 127.0.0.1 {primary} 2\n\
                     sentinel down-after-milliseconds {MASTER} 2000\n\
                     sentinel failover-timeout {MASTER} 3000\n"
                ),
            )
            .unwrap();
            let args = vec![conf.display().to_string(), "--sentinel".to_owned()];
            children.insert(port, spawn(&dir, &args));
            sentinels.push(port);
        }
        let this = Self {
            dir,
            primary,
            replica,
            sentinels,
            tls,
            children: Mutex::new(children),
        };
        this.wait_ready();
        this
    }

    /// `redis+sentinel://` (`rediss+sentinel://` over TLS) naming the three sentinels.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}+sentinel://{}/{MASTER}", hosts.join(","))
    }

    /// The private CA's certificate (PEM), for a TLS deployment.
    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.dir.join("ca.crt")).unwrap()
    }

    /// Runs `redis-cli args…` against the node or sentinel on `port` (over TLS when the
    /// deployment is).
    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        let ca = self.dir.join("ca.crt");
        let tls = self.tls.then_some(ca.as_path());
        cli_with(tls, port, args)
    }

    /// Waits until the replica is in sync and every sentinel knows it and the two others.
    fn wait_ready(&self) {
        let ready = || {
            let synced = self
                .cli(self.replica, &["INFO", "replication"])
                .contains("master_link_status:up");
            let known = self.sentinels.iter().all(|s| {
                let master = self.cli(*s, &["SENTINEL", "MASTER", MASTER]);
                let field = |name: &str| {
                    let lines: Vec<&str> = master.lines().collect();
                    lines
                        .iter()
                        .position(|l| *l == name)
                        .and_then(|i| lines.get(i + 1).map(|v| v.trim().to_owned()))
                };
                field("num-slaves").as_deref() == Some("1")
                    && field("num-other-sentinels").as_deref() == Some("2")
            });
            synced && known
        };
        support::poll::poll_until(
            "the sentinels did not get ready",
            Duration::from_secs(60),
            Duration::from_millis(200),
            ready,
        );
    }

    /// Waits (blocking) until the replica has every write the primary took so far: a SIGKILL
    /// after it loses nothing to asynchronous replication.
    pub fn wait_replica_caught_up(&self) {
        wait_caught_up(
            |port, args| self.cli(port, args),
            self.primary,
            self.replica,
        );
    }

    /// The port of the primary the sentinels name now.
    pub fn named_primary(&self) -> u16 {
        let reply = self.cli(
            self.sentinels[0],
            &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER],
        );
        reply
            .lines()
            .nth(1)
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn kill(&self, port: u16) {
        if let Some(mut child) = self.children.lock().unwrap().remove(&port) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        let ports: Vec<u16> = self.children.lock().unwrap().keys().copied().collect();
        for port in ports {
            self.kill(port);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A data node's arguments; TLS only, with the certificates in `certs`, when given; refusing
/// writes no replica follows when `guarded`.
fn data_node_args(
    port: u16,
    primary: Option<u16>,
    certs: Option<&Path>,
    guarded: bool,
) -> Vec<String> {
    let listen = match certs {
        None => vec!["--port".to_owned(), port.to_string()],
        Some(_) => [
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--tls-replication",
            "yes",
            "--tls-auth-clients",
            "no",
            "--tls-cert-file",
            "server.crt",
            "--tls-key-file",
            "server.key",
            "--tls-ca-cert-file",
            "ca.crt",
        ]
        .map(str::to_owned)
        .to_vec(),
    };
    let mut args = listen;
    args.extend([
        "--bind".to_owned(),
        "127.0.0.1".to_owned(),
        "--save".to_owned(),
        String::new(),
        "--appendonly".to_owned(),
        "no".to_owned(),
    ]);
    if guarded {
        // A replica whose last acknowledgement is older than 5 s no longer counts (a margin
        // for this loaded machine); a promoted replica drops its link at once.
        args.extend(
            [
                "--min-replicas-to-write",
                "1",
                "--min-replicas-max-lag",
                "5",
            ]
            .map(String::from),
        );
    }
    if let Some(primary) = primary {
        args.extend([
            "--replicaof".to_owned(),
            "127.0.0.1".to_owned(),
            primary.to_string(),
        ]);
    }
    args
}

/// Starts `redis-server args…` in `dir`; waits until it says it is ready.
fn spawn(dir: &std::path::Path, args: &[String]) -> Child {
    start_until_ready(
        Command::new("redis-server").args(args).current_dir(dir),
        &["Ready to accept connections", "Sentinel ID is"],
        &format!("redis-server {args:?}"),
    )
}

/// Runs `redis-cli args…` against the plain node or sentinel on `port`.
pub fn cli(port: u16, args: &[&str]) -> String {
    cli_with(None, port, args)
}
