//! Redis Sentinel (issue 16), on private servers: a primary, its replica and three sentinels
//! on free loopback ports. While a producer adds, two workers process and a `QueueEvents`
//! reads, the primary is switched (`SENTINEL FAILOVER`) or killed (SIGKILL): every job added
//! completes, the reader keeps reading, and the jobs that ran twice and the completions the
//! reader never saw are counted and printed (asynchronous replication may lose the last
//! writes before a crash).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bullmq::{
    EventItem, JobState, Prefix, Queue, QueueEvent, QueueEvents, QueueEventsOptions, QueueName,
};
use support::wait::eventually;

use crate::counting::{Runs, backend, counting_worker, produce, reruns};
use crate::support;

const MASTER: &str = "mymaster";

/// A primary, a replica and three sentinels, killed (and their folder removed) on drop.
struct Sentinels {
    dir: PathBuf,
    primary: u16,
    replica: u16,
    sentinels: Vec<u16>,
    children: Mutex<HashMap<u16, Child>>,
}

impl Sentinels {
    fn start() -> Self {
        let dir = std::env::temp_dir().join(format!("{}-sentinel", support::unique_prefix()));
        std::fs::create_dir_all(&dir).unwrap();
        let (primary, replica) = (support::free_port(), support::free_port());
        let mut children = HashMap::new();
        children.insert(primary, spawn(&dir, &data_node_args(primary, None)));
        children.insert(
            replica,
            spawn(&dir, &data_node_args(replica, Some(primary))),
        );
        let mut sentinels = Vec::new();
        for _ in 0..3 {
            let port = support::free_port();
            let conf = dir.join(format!("sentinel-{port}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\nsentinel monitor {MASTER} 127.0.0.1 {primary} 2\n\
                     sentinel down-after-milliseconds {MASTER} 1000\n\
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
            children: Mutex::new(children),
        };
        this.wait_ready();
        this
    }

    fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        format!("redis+sentinel://{}/{MASTER}", hosts.join(","))
    }

    /// Waits until the replica is in sync and every sentinel knows it and the two others.
    fn wait_ready(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let synced =
                cli(self.replica, &["INFO", "replication"]).contains("master_link_status:up");
            let known = self.sentinels.iter().all(|s| {
                let master = cli(*s, &["SENTINEL", "MASTER", MASTER]);
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
            if synced && known {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the sentinels did not get ready"
            );
            // Polled against the servers' own report, within the deadline above.
            #[allow(clippy::disallowed_methods)]
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The port of the primary the sentinels name now.
    fn named_primary(&self) -> u16 {
        let reply = cli(
            self.sentinels[0],
            &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER],
        );
        reply
            .lines()
            .nth(1)
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or(0)
    }

    fn kill(&self, port: u16) {
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

fn data_node_args(port: u16, primary: Option<u16>) -> Vec<String> {
    let mut args = vec![
        "--port".to_owned(),
        port.to_string(),
        "--bind".to_owned(),
        "127.0.0.1".to_owned(),
        "--save".to_owned(),
        String::new(),
        "--appendonly".to_owned(),
        "no".to_owned(),
    ];
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
    let mut child = Command::new("redis-server")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start redis-server ({e}): install Redis 7"));
    let stdout = child.stdout.take().unwrap();
    let mut log = String::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
        let Ok(line) = line else { break };
        if line.contains("Ready to accept connections") || line.contains("Sentinel ID is") {
            return child;
        }
        log.push_str(&line);
        log.push('\n');
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("redis-server {args:?} did not start:\n{log}");
}

fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn run(fault_name: &str, fault: impl FnOnce(&Sentinels)) {
    let sentinels = Sentinels::start();
    let prefix = Prefix::new(support::unique_prefix()).unwrap();
    let queue = Queue::new(
        QueueName::new("failover").unwrap(),
        backend(&sentinels.url(), &prefix, "failover").await,
    );
    let events = QueueEvents::new(
        backend(&sentinels.url(), &prefix, "failover").await,
        QueueEventsOptions::new(),
    )
    .unwrap();
    events.wait_until_ready().await.unwrap();
    let completed_seen: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut sub = events.subscribe();
    let seen = Arc::clone(&completed_seen);
    let reading = tokio::spawn(async move {
        while let Some(item) = sub.recv().await {
            if let EventItem::Event(e) = item
                && let QueueEvent::Completed { job_id, .. } = &e.event
            {
                seen.lock().unwrap().insert(job_id.as_str().to_owned());
            }
        }
    });
    let runs: Runs = Arc::default();
    let workers = [
        counting_worker(&sentinels.url(), &prefix, "failover", &runs).await,
        counting_worker(&sentinels.url(), &prefix, "failover", &runs).await,
    ];

    let (ids, failed_adds) = produce(&queue, || fault(&sentinels)).await;
    let old = sentinels.primary;
    eventually(
        "the sentinels name another primary",
        Duration::from_secs(30),
        || async {
            let now = sentinels.named_primary();
            now != 0 && now != old
        },
    )
    .await;
    assert_eq!(sentinels.named_primary(), sentinels.replica);

    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let missing = loop {
        let mut missing = Vec::new();
        for id in &ids {
            let state = queue.job(id.clone()).get_state().await.ok().flatten();
            if state != Some(JobState::Completed) {
                missing.push((id.clone(), state));
            }
        }
        if missing.is_empty() || tokio::time::Instant::now() > deadline {
            break missing;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    // The reader carries on past the switch: it sees the completion of the last job.
    let last = ids.last().unwrap().as_str().to_owned();
    eventually(
        "the reader sees the last job complete",
        Duration::from_secs(30),
        || async { completed_seen.lock().unwrap().contains(&last) },
    )
    .await;
    for w in &workers {
        w.close().await;
    }
    events.close().await;
    reading.abort();
    let reruns = reruns(&runs);
    let seen = completed_seen.lock().unwrap();
    let unseen = ids.iter().filter(|id| !seen.contains(id.as_str())).count();
    println!(
        "{fault_name}: {} jobs added ({failed_adds} adds retried), {} never completed, {} ran \
         more than once {reruns:?}, {unseen} completions the reader never saw",
        ids.len(),
        missing.len(),
        reruns.len()
    );
    assert!(missing.is_empty(), "jobs lost: {missing:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "issue 16, open: run beside the SIGKILL test on a loaded machine, the producer \
            sometimes keeps writing to the old primary after the switch and those adds are lost \
            (about 1 run in 2 here); alone it passes. Run with `-- --ignored`"]
async fn a_sentinel_failover_loses_no_job_and_everyone_carries_on() {
    run("SENTINEL FAILOVER", |s| {
        let reply = cli(s.sentinels[0], &["SENTINEL", "FAILOVER", MASTER]);
        assert!(reply.contains("OK"), "SENTINEL FAILOVER: {reply}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_primary_is_replaced_and_everyone_carries_on() {
    run("SIGKILL of the primary", |s| s.kill(s.primary)).await;
}
