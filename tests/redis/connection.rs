//! The Redis backend's command connection: a call alone takes a direct connection, calls in
//! flight together share one pipelined connection (docs/RELIABILITY.md R4, R6).
//!
//! Tests that count connections, freeze the server or kill clients run against a private
//! `redis-server`; the others use the shared one under a unique prefix.

use crate::support;

use std::time::Duration;

use crate::support::{PrefixGuard, PrivateRedis};
use bullmq::BackendErrorKind;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{JobId, JobOptions, Prefix, Queue, QueueName};
use serde_json::json;

/// Options for the shared server under a fresh prefix (deleted when the guard drops), with
/// `direct` direct connections beside the pipelined one.
fn shared_server_options(direct: usize) -> (RedisOptions, PrefixGuard) {
    let guard = PrefixGuard::new();
    let options = RedisOptions::new(support::redis_url())
        .prefix(Prefix::new(guard.as_str()).expect("prefix"))
        .direct_connections(direct);
    (options, guard)
}

async fn queue_with(options: RedisOptions, name: &str) -> Queue<RedisBackend> {
    let name = QueueName::new(name).expect("queue name");
    let backend = RedisBackend::connect(&options, name.clone())
        .await
        .expect("connect");
    Queue::try_new(name, backend).expect("the backend is bound to this queue")
}

/// How many clients the server has, this admin connection included.
async fn client_count(url: &str) -> usize {
    let client = redis::Client::open(url).expect("url");
    let mut admin = client
        .get_multiplexed_async_connection()
        .await
        .expect("admin connection");
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut admin)
        .await
        .expect("CLIENT LIST");
    list.lines().count()
}

fn signal(pid: u32, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {sig} {pid}");
}

/// Adds `n` jobs one after another on a private server, through a queue made with the options
/// `configure` gives: all of them go over one connection.
async fn sequential_adds_use_one_connection(
    configure: impl Fn(RedisOptions) -> RedisOptions,
    name: &str,
    n: u64,
) {
    let server = PrivateRedis::start();
    let q = queue_with(configure(RedisOptions::new(server.url())), name).await;
    for i in 0..n {
        q.add("x", &json!({ "n": i }), JobOptions::new())
            .await
            .expect("add");
    }
    assert_eq!(q.count().await.expect("count"), n, "{name}");
    // Ours and the admin's.
    assert_eq!(client_count(&server.url()).await, 2, "{name}");
}

#[tokio::test]
async fn sequential_calls_reuse_one_connection() {
    sequential_adds_use_one_connection(|options| options, "seq", 200).await;
}

#[tokio::test]
async fn concurrent_calls_beyond_the_pool_share_one_more_connection() {
    let server = PrivateRedis::start();
    let options = RedisOptions::new(server.url()).direct_connections(3);
    let q = std::sync::Arc::new(queue_with(options, "burst").await);
    let adds = (0..300).map(|n| {
        let q = std::sync::Arc::clone(&q);
        tokio::spawn(async move {
            q.add("x", &json!({ "n": n }), JobOptions::new())
                .await
                .expect("add")
                .id
        })
    });
    let mut ids = Vec::new();
    for add in adds {
        ids.push(add.await.expect("task"));
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 300, "every add got its own id");
    assert_eq!(q.count().await.expect("count"), 300);
    let clients = client_count(&server.url()).await;
    assert!(
        clients <= 3 + 1 + 1,
        "{clients} clients: at most 3 direct, the shared one and the admin"
    );
}

/// A call dropped after `cut` (at its first await point or somewhere in flight), then job `n`
/// added and read back: the dropped call's connection must not serve anybody else's call
/// afterwards, so both replies are the add's and the read's own. The job's id.
async fn add_after_a_cancelled_call(q: &Queue<RedisBackend>, cut: Duration, n: u32) -> JobId {
    let _ = tokio::time::timeout(cut, q.get_job_counts(&[])).await;
    let job = q
        .add("x", &json!({ "n": n }), JobOptions::new())
        .await
        .expect("add");
    let read = q.get_job(&job.id).await.expect("get").expect("exists");
    assert_eq!(
        read.data,
        format!(r#"{{"n":{n}}}"#),
        "call {n} got another reply"
    );
    job.id
}

#[tokio::test]
async fn cancelled_calls_never_hand_their_reply_to_the_next_call() {
    let (options, _guard) = shared_server_options(2);
    let q = queue_with(options, "cancel").await;
    let mut expected = Vec::new();
    for n in 0..100_u32 {
        let cut = Duration::from_micros(u64::from(n % 7) * 30);
        expected.push(add_after_a_cancelled_call(&q, cut, n).await);
    }
    assert_eq!(q.count().await.expect("count"), 100);
}

#[tokio::test]
async fn a_database_in_the_url_is_the_one_written() {
    let prefix = support::unique_prefix();
    let base = support::redis_url();
    let url = format!("{}/5", base.trim_end_matches('/'));
    let options = RedisOptions::new(&url).prefix(Prefix::new(&prefix).expect("prefix"));
    let q = queue_with(options, "db").await;
    let id = q
        .add("x", &json!({}), JobOptions::new())
        .await
        .expect("add")
        .id;
    let key = format!("{prefix}:db:{id}");
    let exists_in = |db: &'static str| {
        let url = format!("{}/{db}", base.trim_end_matches('/'));
        let key = key.clone();
        async move {
            let client = redis::Client::open(url.as_str()).expect("url");
            let mut con = client
                .get_multiplexed_async_connection()
                .await
                .expect("connect");
            let exists: bool = redis::cmd("EXISTS")
                .arg(&key)
                .query_async(&mut con)
                .await
                .expect("EXISTS");
            if db == "5" {
                let _: () = redis::cmd("DEL")
                    .arg(&key)
                    .query_async(&mut con)
                    .await
                    .expect("clean up");
            }
            exists
        }
    };
    assert!(!exists_in("0").await, "written to db 0");
    assert!(exists_in("5").await, "not in db 5");
    q.obliterate(true, 1000).await.expect("clean up");
}

#[tokio::test]
async fn a_hung_server_makes_calls_time_out_and_service_resumes() {
    let server = PrivateRedis::start();
    let options = RedisOptions::new(server.url()).response_timeout(Duration::from_millis(300));
    let q = queue_with(options, "hung").await;
    q.add("x", &json!({}), JobOptions::new())
        .await
        .expect("add");
    signal(server.pid(), "-STOP");
    let started = std::time::Instant::now();
    let outcome = q.count().await;
    signal(server.pid(), "-CONT");
    let err = outcome.expect_err("the server is frozen");
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Timeout), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(q.count().await.expect("after SIGCONT"), 1);
}

#[tokio::test]
async fn a_connection_killed_while_idle_is_replaced_before_use() {
    let server = PrivateRedis::start();
    let q = queue_with(RedisOptions::new(server.url()), "idle").await;
    q.add("x", &json!({}), JobOptions::new())
        .await
        .expect("add");
    assert_eq!(server.kill_clients().await, 1);
    // Give the close time to arrive, as it has on any connection idle for a while.
    // Fixed wait: the server's close reaches the client socket asynchronously, as on a
    // connection idle for a while; nothing in the client announces it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(q.count().await.expect("no error: replaced before use"), 1);
}

#[tokio::test]
async fn a_unix_socket_url_works() {
    let server = PrivateRedis::start_with(|port, dir| {
        vec![
            "--port".into(),
            port.to_string(),
            "--unixsocket".into(),
            dir.join("redis.sock").display().to_string(),
        ]
    });
    let url = format!("redis+unix://{}", server.dir.join("redis.sock").display());
    let q = queue_with(RedisOptions::new(url), "unix").await;
    q.add("x", &json!({}), JobOptions::new())
        .await
        .expect("add");
    assert_eq!(q.count().await.expect("count"), 1);
}

/// Many calls in flight on the pipelined connection, some dropped at random points: every
/// call that completes gets its own reply.
#[tokio::test]
async fn pipelined_calls_get_their_own_replies_even_when_others_are_cancelled() {
    let (options, _guard) = shared_server_options(0);
    let q = std::sync::Arc::new(queue_with(options, "pipelined-cancel").await);
    let tasks = (0..200_u32).map(|n| {
        let q = std::sync::Arc::clone(&q);
        tokio::spawn(async move {
            let cut = Duration::from_micros(u64::from(n % 5) * 40);
            add_after_a_cancelled_call(&q, cut, n).await
        })
    });
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.expect("task"));
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 200);
    assert_eq!(q.count().await.expect("count"), 200);
}

/// The pipelined connection killed under a burst: the calls in flight fail with a connection
/// error, later ones go through on a new connection, and every add that succeeded is there.
#[tokio::test]
async fn a_pipelined_connection_killed_mid_burst_fails_its_calls_and_is_replaced() {
    let server = PrivateRedis::start();
    let q = std::sync::Arc::new(
        queue_with(
            RedisOptions::new(server.url()).direct_connections(0),
            "killed",
        )
        .await,
    );
    let adds = |from: u32| {
        (from..from + 400).map(|n| {
            let q = std::sync::Arc::clone(&q);
            tokio::spawn(async move { q.add("x", &json!({ "n": n }), JobOptions::new()).await })
        })
    };
    let first: Vec<_> = adds(0).collect();
    server.kill_clients().await;
    let mut succeeded = 0;
    for add in first {
        match add.await.expect("task") {
            Ok(_) => succeeded += 1,
            Err(e) => assert_eq!(e.backend_kind(), Some(BackendErrorKind::Connection), "{e}"),
        }
    }
    // Give the close time to arrive (a burst that finished before the kill has not seen it).
    // Fixed wait: the server's close reaches the client socket asynchronously; nothing in the
    // client announces it.
    tokio::time::sleep(Duration::from_millis(100)).await;
    for add in adds(400).collect::<Vec<_>>() {
        add.await.expect("task").expect("an add after the kill");
        succeeded += 1;
    }
    // An add whose reply was lost may still have been written: never fewer than succeeded.
    let count = q.count().await.expect("count");
    assert!(
        (succeeded..=800).contains(&count),
        "{count} jobs for {succeeded} successful adds"
    );
}

/// On a fresh server every script call first meets `NOSCRIPT`: `add_bulk`'s batches after
/// the first are still opening the pipelined connection (started, not awaited) when the first
/// batch's jobs are retried one by one, and those retries must not wait on them.
#[tokio::test]
async fn add_bulk_on_a_server_without_the_scripts_completes() {
    let server = PrivateRedis::start();
    let q = queue_with(RedisOptions::new(server.url()), "fresh").await;
    let jobs = (0..400)
        .map(|n| bullmq::BulkJob {
            name: "x".to_owned(),
            data: json!({ "n": n }),
            opts: JobOptions::new(),
        })
        .collect();
    let added = tokio::time::timeout(Duration::from_secs(20), q.add_bulk(jobs))
        .await
        .expect("add_bulk finished")
        .expect("add_bulk");
    assert_eq!(added.len(), 400);
    assert_eq!(q.count().await.expect("count"), 400);
}

#[tokio::test]
async fn a_hung_server_times_out_pipelined_calls_and_service_resumes() {
    let server = PrivateRedis::start();
    let options = RedisOptions::new(server.url())
        .direct_connections(0)
        .response_timeout(Duration::from_millis(300));
    let q = std::sync::Arc::new(queue_with(options, "hung-pipelined").await);
    q.add("x", &json!({}), JobOptions::new())
        .await
        .expect("add");
    signal(server.pid(), "-STOP");
    let counts: Vec<_> = (0..10)
        .map(|_| {
            let q = std::sync::Arc::clone(&q);
            tokio::spawn(async move { q.count().await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for count in counts {
        outcomes.push(count.await.expect("task"));
    }
    signal(server.pid(), "-CONT");
    for outcome in outcomes {
        let err = outcome.expect_err("the server is frozen");
        assert_eq!(err.backend_kind(), Some(BackendErrorKind::Timeout), "{err}");
    }
    assert_eq!(q.count().await.expect("after SIGCONT"), 1);
}

#[tokio::test]
async fn without_direct_connections_every_call_goes_through_the_pipelined_one() {
    sequential_adds_use_one_connection(|options| options.direct_connections(0), "mux", 20).await;
}

#[tokio::test]
async fn a_zero_response_timeout_is_refused() {
    let options = RedisOptions::new(support::redis_url()).response_timeout(Duration::ZERO);
    let err = RedisBackend::connect(&options, QueueName::new("t").expect("name"))
        .await
        .expect_err("zero timeout");
    assert!(err.to_string().contains("response_timeout"), "{err}");
}

#[tokio::test]
async fn a_failed_connect_names_the_server_the_cause_and_the_fix_without_the_password() {
    let port = support::free_port();
    let url = format!("redis://app:s3cret@127.0.0.1:{port}");
    let err = RedisBackend::connect(
        &RedisOptions::new(url),
        QueueName::new("q").expect("queue name"),
    )
    .await
    .expect_err("nothing listens there");
    let message = err.to_string();
    assert!(
        message.contains(&format!(
            "cannot connect to redis://app:***@127.0.0.1:{port}"
        )),
        "{message}"
    );
    assert!(message.contains("Is Redis running there?"), "{message}");
    assert!(!message.contains("s3cret"), "{message}");
    assert!(!format!("{err:?}").contains("s3cret"), "{err:?}");
}
