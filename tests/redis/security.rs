//! Least privilege and refusals on Redis (issue 15, docs/RELIABILITY.md S1–S3), each on a private
//! `redis-server` whose users the test sets up itself (the shared server's users are never
//! touched):
//! - the ACL published in docs/SECURITY.md runs a producer, a worker with retries, flows, a
//!   scheduler, `QueueEvents` and the admin getters, with `ACL LOG` empty afterwards; so does
//!   `+@all -@dangerous` (where `INFO` is denied);
//! - a refused command names the command and the key;
//! - with `BZPOPMIN` denied, or the server a replica for a while, a worker still takes the jobs
//!   added meanwhile, and reports the refusal a bounded number of times.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::PrivateRedis;
use crate::support::wait::eventually;
use bullmq::BackendErrorKind;
use bullmq::RepeatOptions;
use bullmq::backend::Range;
use bullmq::flow::{FlowJob, FlowProducer};
use bullmq::job::JobType;
use bullmq::redis::{RedisBackend, RedisError, RedisOptions, Refusal};
use bullmq::scheduler::{JobScheduler, JobTemplate};
use bullmq::{
    Error, JobError, JobOptions, Prefix, Queue, QueueEvents, QueueEventsOptions, QueueName, Worker,
    WorkerEvent, WorkerOptions,
};
use serde_json::json;

/// The ACL of docs/SECURITY.md for key prefix `prefix`, as `ACL SETUSER` arguments after the
/// user name (the password is `pw`).
fn published_acl(prefix: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/SECURITY.md"))
        .expect("docs/SECURITY.md");
    let start = doc.find("<!-- acl -->").expect("the ACL block") + "<!-- acl -->".len();
    let end = doc[start..].find("<!-- /acl -->").expect("its end") + start;
    let block = &doc[start..end];
    block
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .flat_map(str::split_whitespace)
        // `ACL SETUSER bullmq`: the test names its own user.
        .skip(3)
        .map(|word| word.replace("<prefix>", prefix).replace(">PASSWORD", ">pw"))
        .collect()
}

/// `ACL SETUSER worker <args>` on the private server.
/// The password of `root`, the admin user of a server whose `default` user is off.
const ROOT: &str = "root:rootpw@";

/// Makes `bullmq` (password `pw`) the one user of the published ACL for `prefix`, with the
/// `default` user off.
async fn published_user_only(server: &PrivateRedis, prefix: &str) {
    set_user(server, "bullmq", &published_acl(prefix)).await;
    disable_default_user(server).await;
}

/// Asserts the server refused no command: its `ACL LOG` is empty.
async fn assert_nothing_refused(server: &PrivateRedis) {
    let log = acl_log(&mut admin(server).await).await;
    assert!(log.is_empty(), "ACL LOG after the run: {log:?}");
}

/// Disables the `default` user (as a least-privilege deployment does), after making `root`
/// the admin [`admin`] connects as from then on.
async fn disable_default_user(server: &PrivateRedis) {
    let mut con = admin(server).await;
    for args in [
        &["SETUSER", "root", "on", ">rootpw", "~*", "&*", "+@all"][..],
        &["SETUSER", "default", "off"][..],
    ] {
        let () = redis::cmd("ACL")
            .arg(args)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    std::fs::write(server.dir.join("root"), "").unwrap();
}

/// An admin connection to `server` (as `root` once the default user is off), over TLS when it
/// was started so.
async fn admin(server: &PrivateRedis) -> redis::aio::MultiplexedConnection {
    // `disable_default_user` leaves this mark.
    let user = if server.dir.join("root").exists() {
        ROOT
    } else {
        ""
    };
    admin_as(server, user)
        .await
        .unwrap_or_else(|e| panic!("no admin connection to the private server: {e}"))
}

async fn admin_as(
    server: &PrivateRedis,
    user: &str,
) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    let ca = std::fs::read(server.dir.join("ca.crt"));
    let Ok(ca) = ca else {
        let url = format!("redis://{user}127.0.0.1:{}", server.port);
        let mut con = redis::Client::open(url)?
            .get_multiplexed_async_connection()
            .await?;
        let _: redis::Value = redis::cmd("PING").query_async(&mut con).await?;
        return Ok(con);
    };
    let certificates = redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(ca),
    };
    let url = format!("rediss://{user}localhost:{}", server.port);
    let mut con = redis::Client::build_with_tls(url, certificates)?
        .get_multiplexed_async_connection()
        .await?;
    let _: redis::Value = redis::cmd("PING").query_async(&mut con).await?;
    Ok(con)
}

async fn set_user(server: &PrivateRedis, user: &str, args: &[String]) {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER").arg(user).arg("reset");
    for a in args {
        cmd.arg(a);
    }
    let () = cmd
        .query_async(&mut admin(server).await)
        .await
        .unwrap_or_else(|e| panic!("ACL SETUSER {args:?}: {e}"));
}

async fn acl_log(admin: &mut redis::aio::MultiplexedConnection) -> Vec<redis::Value> {
    redis::cmd("ACL")
        .arg("LOG")
        .query_async(admin)
        .await
        .expect("ACL LOG")
}

fn user_url(server: &PrivateRedis, user: &str) -> String {
    format!("redis://{user}:pw@127.0.0.1:{}", server.port)
}

async fn backend(url: &str, prefix: &str, queue: &str) -> RedisBackend {
    backend_with(&RedisOptions::new(url), prefix, queue).await
}

/// A backend on `base` (URL, CA) with `prefix`.
async fn backend_with(base: &RedisOptions, prefix: &str, queue: &str) -> RedisBackend {
    let options = base.clone().prefix(Prefix::new(prefix).unwrap());
    RedisBackend::connect(&options, QueueName::new(queue).unwrap())
        .await
        .unwrap_or_else(|e| panic!("connect as the ACL user: {e}"))
}

/// Producer, worker with a retry, flow, scheduler, `QueueEvents` and getters, all as `url`'s
/// user; fails on the first refusal.
async fn conformance_subset(server: &PrivateRedis, url: &str, prefix: &str) {
    conformance_subset_on(server, &RedisOptions::new(url), prefix).await;
}

/// [`conformance_subset`] on `base`'s URL and CA.
async fn conformance_subset_on(server: &PrivateRedis, base: &RedisOptions, prefix: &str) {
    let name = QueueName::new("acl").unwrap();
    let queue = Queue::try_new(name.clone(), backend_with(base, prefix, "acl").await)
        .expect("the backend is bound to this queue");
    let events = QueueEvents::new(
        backend_with(base, prefix, "acl").await,
        QueueEventsOptions::new(),
    )
    .expect("queue events");
    if tokio::time::timeout(Duration::from_secs(10), events.wait_until_ready())
        .await
        .is_err()
    {
        panic!(
            "QueueEvents not ready; ACL LOG: {:?}",
            acl_log(&mut admin(server).await).await
        );
    }
    let mut seen = events.subscribe();

    queue
        .add("one", &json!({"n": 1}), JobOptions::new().attempts(2))
        .await
        .expect("add");
    queue
        .add_bulk(vec![
            bullmq::BulkJob {
                name: "bulk".into(),
                data: json!({"n": 2}),
                opts: JobOptions::new(),
            },
            bullmq::BulkJob {
                name: "bulk".into(),
                data: json!({"n": 3}),
                opts: JobOptions::new().delay(Duration::from_millis(50)),
            },
        ])
        .await
        .expect("add_bulk");
    FlowProducer::new(backend_with(base, prefix, "acl").await)
        .add(
            FlowJob::new(name.clone(), "parent", json!({})).child(FlowJob::new(
                name.clone(),
                "child",
                json!({}),
            )),
        )
        .await
        .expect("flow");
    JobScheduler::new(backend_with(base, prefix, "acl").await)
        .upsert(
            "tick",
            &RepeatOptions {
                every: Some(Duration::from_secs(3600)),
                ..RepeatOptions::default()
            },
            JobTemplate::named("tick"),
        )
        .await
        .expect("scheduler upsert");

    let tries = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&tries);
    let worker = Worker::new(
        name.clone(),
        backend_with(base, prefix, "acl").await,
        WorkerOptions::default(),
        move |job: bullmq::ActiveJob<RedisBackend>, _| {
            let counted = Arc::clone(&counted);
            async move {
                if job.name == "one" && counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(JobError::failed("first try fails"));
                }
                Ok(json!("ok"))
            }
        },
    )
    .await
    .expect("worker");
    let mut errors = worker.events();
    worker.run().expect("run");
    // one (retried), two bulk, parent, child, the scheduler's first tick.
    eventually("every job completed", Duration::from_secs(20), || async {
        queue
            .get_job_counts(&[JobType::State(bullmq::JobState::Completed)])
            .await
            .expect("counts")[0]
            .1
            == 6
    })
    .await;
    while let Ok(event) = errors.try_recv() {
        if let WorkerEvent::Error(err) = event {
            panic!("the worker met an error as the ACL user: {err}");
        }
    }
    assert_eq!(tries.load(Ordering::SeqCst), 2, "`one` was retried once");
    let got = tokio::time::timeout(Duration::from_secs(5), seen.recv())
        .await
        .expect("an event in time");
    assert!(got.is_some(), "QueueEvents delivers");
    // Admin getters.
    queue
        .get_jobs(&[JobType::State(bullmq::JobState::Completed)], Range::ALL)
        .await
        .expect("get_jobs");
    queue.count().await.expect("count");
    queue.get_job_counts(&[]).await.expect("get_job_counts");
    worker.close().await;
    events.close().await;
}

#[tokio::test]
async fn the_published_acl_runs_producer_worker_flows_schedulers_and_events() {
    let server = PrivateRedis::start();
    let prefix = "app1";
    published_user_only(&server, prefix).await;
    conformance_subset(&server, &user_url(&server, "bullmq"), prefix).await;
    assert_nothing_refused(&server).await;
}

#[tokio::test]
async fn the_published_acl_over_tls_with_user_and_password_in_the_url() {
    let server = PrivateRedis::start_tls();
    let prefix = "app6";
    published_user_only(&server, prefix).await;
    let ca = std::fs::read(server.dir.join("ca.crt")).expect("ca.crt");
    let base = RedisOptions::new(format!("rediss://bullmq:pw@localhost:{}", server.port))
        .ca_certificate(ca);
    conformance_subset_on(&server, &base, prefix).await;
    assert_nothing_refused(&server).await;
}

#[tokio::test]
async fn all_but_dangerous_commands_connect_without_info() {
    let server = PrivateRedis::start();
    let prefix = "app2";
    let args: Vec<String> = [
        "on",
        ">pw",
        "~app2:*",
        "resetchannels",
        "+@all",
        "-@dangerous",
    ]
    .map(str::to_owned)
    .to_vec();
    set_user(&server, "limited", &args).await;
    let b = backend(&user_url(&server, "limited"), prefix, "acl").await;
    let read = b.server().expect("the server was read (from HELLO)");
    assert!(
        read.version.starts_with(|c: char| c.is_ascii_digit()),
        "{read:?}"
    );
    conformance_subset(&server, &user_url(&server, "limited"), prefix).await;
    // Only `INFO` was refused (the server was read from HELLO instead).
    for entry in acl_log(&mut admin(&server).await).await {
        let entry = format!("{entry:?}");
        assert!(entry.contains("\"info\""), "{entry}");
    }
}

#[tokio::test]
async fn a_key_outside_the_users_pattern_is_named_in_the_error() {
    let server = PrivateRedis::start();
    let args: Vec<String> = ["on", ">pw", "~mine:*", "+@all", "-@dangerous"]
        .map(str::to_owned)
        .to_vec();
    set_user(&server, "narrow", &args).await;
    let queue = Queue::try_new(
        QueueName::new("q").unwrap(),
        backend(&user_url(&server, "narrow"), "theirs", "q").await,
    )
    .expect("the backend is bound to this queue");
    let err = queue
        .add("x", &json!({}), JobOptions::new())
        .await
        .expect_err("outside the key pattern");
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Server), "{err}");
    let Error::Backend(inner) = &err else {
        panic!("{err:?}")
    };
    let redis_err = (&**inner as &(dyn std::error::Error + 'static))
        .downcast_ref::<RedisError>()
        .expect("a RedisError");
    assert_eq!(redis_err.refusal(), Some(Refusal::NoPermission));
    let message = err.to_string();
    assert!(message.contains("command `HSET`"), "{message}");
    assert!(message.contains("key `theirs:q:meta`"), "{message}");
    assert!(message.contains("~<prefix>:*"), "{message}");
}

/// A worker on `url` counting its error events, and how many jobs it completed.
async fn counting_worker(
    url: &str,
    prefix: &str,
) -> (
    impl Drop,
    Arc<AtomicUsize>,
    Arc<AtomicUsize>,
    Queue<RedisBackend>,
) {
    struct Closer(Option<tokio::task::JoinHandle<()>>);
    impl Drop for Closer {
        fn drop(&mut self) {
            if let Some(h) = self.0.take() {
                h.abort();
            }
        }
    }
    let name = QueueName::new("stall").unwrap();
    let queue = Queue::try_new(name.clone(), backend(url, prefix, "stall").await)
        .expect("the backend is bound to this queue");
    let done = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&done);
    let worker = Worker::new(
        name,
        backend(url, prefix, "stall").await,
        WorkerOptions::default(),
        move |_job: bullmq::ActiveJob<RedisBackend>, _| {
            let counted = Arc::clone(&counted);
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok(json!(1))
            }
        },
    )
    .await
    .expect("worker");
    let errors = Arc::new(AtomicUsize::new(0));
    let mut rx = worker.events();
    let counting = Arc::clone(&errors);
    worker.run().expect("run");
    let handle = tokio::spawn(async move {
        let _worker = worker;
        loop {
            match rx.recv().await {
                Ok(WorkerEvent::Error(_)) => {
                    counting.fetch_add(1, Ordering::SeqCst);
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => break,
            }
        }
    });
    (Closer(Some(handle)), errors, done, queue)
}

/// Adds `n` jobs named `name` to `queue` and waits until the worker has run `total` in all.
async fn add_and_run(
    (queue, done): (&Queue<RedisBackend>, &AtomicUsize),
    name: &str,
    n: usize,
    total: usize,
    what: &str,
) {
    for i in 0..n {
        queue
            .add(name, &json!({"i": i}), JobOptions::new())
            .await
            .unwrap();
    }
    eventually(what, Duration::from_secs(10), || async {
        done.load(Ordering::SeqCst) == total
    })
    .await;
}

#[tokio::test]
async fn a_worker_whose_bzpopmin_is_denied_still_takes_jobs() {
    let server = PrivateRedis::start();
    let args: Vec<String> = ["on", ">pw", "~app3:*", "+@all", "-@dangerous", "-bzpopmin"]
        .map(str::to_owned)
        .to_vec();
    set_user(&server, "noblock", &args).await;
    let url = user_url(&server, "noblock");
    let (_guard, errors, done, queue) = counting_worker(&url, "app3").await;
    // Let it find the queue empty and fail its blocking wait for a few seconds.
    // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let meanwhile = "the jobs added meanwhile are processed";
    add_and_run((&queue, &done), "j", 5, 5, meanwhile).await;
    let reported = errors.load(Ordering::SeqCst);
    assert!(
        (1..=3).contains(&reported),
        "the refusal is reported once per cause, not in a loop: {reported}"
    );
}

#[tokio::test]
async fn a_worker_gets_over_a_server_that_is_a_replica_for_a_while() {
    let server = PrivateRedis::start();
    let url = server.url();
    let (_guard, errors, done, queue) = counting_worker(&url, "app4").await;
    add_and_run((&queue, &done), "before", 1, 1, "the first job").await;
    // A replica of a primary that is not there: read-only, its data kept.
    let mut admin = server.admin().await;
    let () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(support::free_port())
        .query_async(&mut admin)
        .await
        .unwrap();
    // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut admin)
        .await
        .unwrap();
    let after = "the jobs added after are processed";
    add_and_run((&queue, &done), "after", 5, 6, after).await;
    let reported = errors.load(Ordering::SeqCst);
    assert!(
        reported <= 6,
        "READONLY is reported once per cause, not ten times a second: {reported}"
    );
}

/// The relay (experimental) under the published ACL: its keys are under the prefix
/// (`<prefix>::relay:…`), its scripts' commands are in the list, and its blocking `XREAD`
/// too; only `node_connections` (`CLIENT INFO`, `CLIENT LIST`) is left out, as for
/// `get_workers`.
#[tokio::test]
async fn the_published_acl_runs_the_relay() {
    use bullmq::relay::{Relay, RelayMessage, RelayOptions};
    let server = PrivateRedis::start();
    let prefix = "app7";
    published_user_only(&server, prefix).await;
    let b = backend(&user_url(&server, "bullmq"), prefix, "relay").await;
    let opts = || {
        RelayOptions::new()
            .block_timeout(std::time::Duration::from_millis(300))
            .sweep_interval(std::time::Duration::from_millis(100))
    };
    let node = Relay::new(&b, opts()).await.unwrap();
    let publisher = Relay::new(&b, opts()).await.unwrap();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&got);
    let _sub = node
        .subscribe("a.>", move |m: RelayMessage<serde_json::Value>| {
            sink.lock().unwrap().push(m.mid);
        })
        .await
        .unwrap();
    publisher
        .publish(
            "a.b",
            &json!({"x": 1}),
            Some(std::time::Duration::from_secs(5)),
        )
        .await
        .unwrap();
    support::eventually(
        "the message",
        std::time::Duration::from_secs(20),
        || async { got.lock().unwrap().len() == 1 },
    )
    .await;
    assert_eq!(publisher.counts().await.unwrap().subscriptions, 1);
    assert_eq!(publisher.retained(0, -1).await.unwrap().len(), 1);
    assert_eq!(publisher.namespaces().await.unwrap(), ["default"]);
    assert!(publisher.delete_retained("a.b").await.unwrap());
    node.close().await;
    publisher.close().await;
    assert_nothing_refused(&server).await;
}
