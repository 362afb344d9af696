//! The Redis backend's command connection: a pool of connections each serving one call at a
//! time, with calls beyond the pool sharing one multiplexed connection (RELIABILITY R4, R6).
//!
//! Tests that count connections, freeze the server or kill clients run against a private
//! `redis-server`; the others use the shared one under a unique prefix.

mod support;

use std::time::Duration;

use bullmq::core::BackendErrorKind;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{JobOptions, Prefix, Queue, QueueName};
use serde_json::json;
use support::{PrefixGuard, PrivateRedis};

async fn queue_with(options: RedisOptions, name: &str) -> Queue<RedisBackend> {
    let name = QueueName::new(name).expect("queue name");
    let backend = RedisBackend::connect(&options, name.clone())
        .await
        .expect("connect");
    Queue::new(name, backend)
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

#[tokio::test]
async fn sequential_calls_reuse_one_connection() {
    let server = PrivateRedis::start();
    let q = queue_with(RedisOptions::new(server.url()), "seq").await;
    for n in 0..200 {
        q.add("x", &json!({ "n": n }), JobOptions::new())
            .await
            .expect("add");
    }
    assert_eq!(q.count().await.expect("count"), 200);
    // Ours and the admin's.
    assert_eq!(client_count(&server.url()).await, 2);
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

#[tokio::test]
async fn cancelled_calls_never_hand_their_reply_to_the_next_call() {
    let prefix = support::unique_prefix();
    let _guard = PrefixGuard(prefix.clone());
    let options = RedisOptions::new(support::redis_url())
        .prefix(Prefix::new(&prefix).expect("prefix"))
        .direct_connections(2);
    let q = queue_with(options, "cancel").await;
    let mut expected = Vec::new();
    for n in 0..100_u32 {
        // Dropped at its first await point or somewhere in flight: either way its
        // connection must not serve anybody else's call afterwards.
        let cut = Duration::from_micros(u64::from(n % 7) * 30);
        let _ = tokio::time::timeout(cut, q.get_job_counts(&[])).await;
        let job = q
            .add("x", &json!({ "n": n }), JobOptions::new())
            .await
            .expect("add");
        expected.push(job.id.clone());
        let read = q.get_job(&job.id).await.expect("get").expect("exists");
        assert_eq!(
            read.data,
            format!(r#"{{"n":{n}}}"#),
            "call {n} got another reply"
        );
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
    let client = redis::Client::open(server.url()).expect("url");
    let mut admin = client
        .get_multiplexed_async_connection()
        .await
        .expect("admin connection");
    let killed: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
        .query_async(&mut admin)
        .await
        .expect("CLIENT KILL");
    assert_eq!(killed, 1);
    // Give the close time to arrive, as it has on any connection idle for a while.
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

#[tokio::test]
async fn without_direct_connections_every_call_goes_through_the_multiplexed_one() {
    let server = PrivateRedis::start();
    let q = queue_with(RedisOptions::new(server.url()).direct_connections(0), "mux").await;
    for _ in 0..20 {
        q.add("x", &json!({}), JobOptions::new())
            .await
            .expect("add");
    }
    assert_eq!(q.count().await.expect("count"), 20);
    assert_eq!(client_count(&server.url()).await, 2);
}

#[tokio::test]
async fn a_zero_response_timeout_is_refused() {
    let options = RedisOptions::new(support::redis_url()).response_timeout(Duration::ZERO);
    let err = RedisBackend::connect(&options, QueueName::new("t").expect("name"))
        .await
        .expect_err("zero timeout");
    assert!(err.to_string().contains("response_timeout"), "{err}");
}
