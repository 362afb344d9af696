//! The Kubernetes worker example (`examples/k8s_worker`) as Kubernetes runs it: started as a
//! process with its settings in the environment, ready once its probe says so, serving its
//! metrics, then sent `SIGTERM` with jobs in flight: they finish, it exits 0 within its grace
//! period, and no job is left active. On Redis and on PostgreSQL.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bullmq::job::JobType;
use bullmq::{AnyBackend, ConnectOptions, JobOptions, JobState, Prefix, Queue, QueueName};
use bullmq_test_support::free_port;
use serde_json::json;

use crate::support::wait::eventually;

const JOBS: usize = 10;
/// Each job's simulated work: long enough to be in flight when the signal comes.
const WORK_MS: &str = "1500";
/// The example's close timeout, as `terminationGracePeriodSeconds` would bound it.
const GRACE: Duration = Duration::from_secs(10);
const WAIT: Duration = Duration::from_secs(30);

/// One HTTP/1.1 GET on `127.0.0.1:<port>`: the status code and the body.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let status = reply.split(' ').nth(1)?.parse().ok()?;
    let body = reply.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
    Some((status, body))
}

/// Kills the example if the test fails before it exits by itself.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn sigterm_with_jobs_in_flight(url: &str, isolate: (&str, &str)) {
    let example = support::workspace_bin::example("k8s_worker", &crate::features());
    let port = free_port();
    let queue_name = "k8s";
    let child = Command::new(&example)
        .env("QUEUE_URL", url)
        .env("QUEUE_NAME", queue_name)
        .env(isolate.0, isolate.1)
        .env("WORKER_COUNT", "2")
        .env("CONCURRENCY", "5")
        .env("WORK_MS", WORK_MS)
        .env("CLOSE_TIMEOUT_SECS", GRACE.as_secs().to_string())
        .env("LISTEN", format!("127.0.0.1:{port}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example");
    let mut running = Running(child);

    eventually("the example ready", WAIT, || async {
        get(port, "/readyz").is_some_and(|(status, _)| status == 200)
    })
    .await;
    let (status, _) = get(port, "/healthz").expect("liveness probe");
    assert_eq!(status, 200);

    let mut connect = ConnectOptions::new(url);
    connect = if isolate.0 == "QUEUE_PREFIX" {
        connect.prefix(Prefix::new(isolate.1).unwrap())
    } else {
        connect.schema(isolate.1)
    };
    let backend: AnyBackend = connect.connect(queue_name).await.unwrap();
    let queue = Queue::try_new(QueueName::new(queue_name).unwrap(), backend)
        .expect("the backend is bound to this queue");
    for i in 0..JOBS {
        queue
            .add("work", &json!({ "i": i }), JobOptions::new())
            .await
            .unwrap();
    }
    let count = |state: JobState| {
        let queue = &queue;
        async move {
            queue
                .get_job_count_by_types(&[JobType::State(state)])
                .await
                .unwrap()
        }
    };
    eventually("every job in flight", WAIT, || async {
        count(JobState::Active).await == JOBS as u64
    })
    .await;
    let (status, metrics) = get(port, "/metrics").expect("metrics");
    assert_eq!(status, 200);
    assert!(metrics.contains("bullmq_pool_workers"), "{metrics}");
    assert!(metrics.contains("bullmq_queue_active"), "{metrics}");
    let (status, scaling) = get(port, "/scaling").expect("the scaling signal");
    assert_eq!(status, 200);
    let scaling: serde_json::Value = serde_json::from_str(&scaling).unwrap();
    assert_eq!(scaling["queue"], "k8s", "{scaling}");
    assert_eq!(scaling["active"], JOBS, "{scaling}");
    assert_eq!(scaling["backlog"], 0, "{scaling}");
    assert!(
        count(JobState::Completed).await < JOBS as u64,
        "the jobs are still running"
    );

    let pid = running.0.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(sent.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = running.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < GRACE,
            "not exited within the grace period"
        );
        // A poll interval, not a wait for time to pass.
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut stdout = String::new();
    running
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let mut stderr = String::new();
    running
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        status.success(),
        "exit {status}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("every job in flight finished: true"),
        "{stdout}"
    );
    assert_eq!(
        count(JobState::Completed).await,
        JOBS as u64,
        "every job finished"
    );
    assert_eq!(count(JobState::Active).await, 0, "none left active");
    assert_eq!(
        queue.get_workers_count().await.unwrap(),
        0,
        "every worker deregistered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_jobs_in_flight_and_exits_0_on_redis() {
    let prefix = support::PrefixGuard::new();
    sigterm_with_jobs_in_flight(&support::redis_url(), ("QUEUE_PREFIX", prefix.as_str())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_jobs_in_flight_and_exits_0_on_postgres() {
    let schema = support::postgres::SchemaGuard::new("k8s");
    sigterm_with_jobs_in_flight(
        &support::postgres::database_url(),
        ("QUEUE_SCHEMA", schema.as_str()),
    )
    .await;
}
