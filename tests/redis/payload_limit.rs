//! Jobs larger than the server's `proto-max-bulk-len`, on a private `redis-server` started
//! with `--proto-max-bulk-len 1mb`: refused before anything is sent, with a typed error that
//! names the job, its size and the limit; a bulk with one such job writes nothing, and a
//! retry without it adds every other job exactly once. Where the user may not run `CONFIG`,
//! the default limit (512 MB) is assumed and the server's own refusal is reported, typed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use bullmq::error::{BulkAddError, PayloadTooLarge};
use bullmq::redis::{RedisBackend, RedisError, RedisOptions, Refusal};
use bullmq::{BackendErrorKind, BulkJob, Error, JobOptions, Prefix, Queue, QueueName};
use serde_json::{Value, json};

use crate::support::PrivateRedis;
use crate::support::waiting::waiting_names;

const LIMIT: u64 = 1024 * 1024;

/// A private server that takes arguments of at most 1 MB.
fn server() -> PrivateRedis {
    PrivateRedis::start_with(|port, _| {
        ["--port", &port.to_string(), "--proto-max-bulk-len", "1mb"]
            .map(str::to_owned)
            .to_vec()
    })
}

async fn queue_on(options: RedisOptions, prefix: &str) -> Queue<RedisBackend> {
    let name = QueueName::new("big").unwrap();
    let options = options.prefix(Prefix::new(prefix).unwrap());
    let backend = RedisBackend::connect(&options, name.clone()).await.unwrap();
    Queue::try_new(name, backend).expect("the backend is bound to this queue")
}

/// A queue on a direct connection, and one on the pipelined connection alone (no direct
/// connection), each under a prefix of its own.
async fn direct_and_piped(server: &PrivateRedis) -> [Queue<RedisBackend>; 2] {
    [
        queue_on(RedisOptions::new(server.url()), "direct").await,
        queue_on(
            RedisOptions::new(server.url()).direct_connections(0),
            "piped",
        )
        .await,
    ]
}

/// Data of about 2 MB as JSON.
fn big() -> Value {
    json!({ "blob": "x".repeat(2 * 1024 * 1024) })
}

fn bulk(names: &[&str]) -> Vec<BulkJob<Value>> {
    names
        .iter()
        .map(|name| BulkJob {
            name: (*name).to_owned(),
            data: if name.starts_with("big") {
                big()
            } else {
                json!({ "n": name })
            },
            opts: JobOptions::new(),
        })
        .collect()
}

/// The names of the jobs of a bulk of `names` that `failed` says to retry, but the one at
/// `big`.
fn retry_without<'a>(failed: &BulkAddError, big: usize, names: &[&'a str]) -> Vec<&'a str> {
    failed
        .to_retry()
        .into_iter()
        .filter(|i| *i != big)
        .map(|i| names[i])
        .collect()
}

fn assert_too_large(err: &Error, index: Option<usize>, name: &str) {
    let Error::TooLarge(PayloadTooLarge {
        index: at,
        job_name,
        part,
        size,
        limit,
        setting,
    }) = err
    else {
        panic!("a PayloadTooLarge, not {err:?}")
    };
    assert_eq!((*at, job_name.as_str(), *part), (index, name, "data"));
    assert!(*size > 2 * LIMIT, "{err}");
    assert_eq!((*limit, *setting), (LIMIT, "proto-max-bulk-len"));
    // Not a backend error: nothing to retry on another connection.
    assert_eq!(err.backend_kind(), None);
    let message = err.to_string();
    assert!(
        message.contains(&format!(
            "is {size} bytes, over the server's proto-max-bulk-len of {LIMIT} bytes"
        )) && message.contains("raise proto-max-bulk-len"),
        "{message}"
    );
}

#[tokio::test]
async fn a_job_over_proto_max_bulk_len_is_refused_before_it_is_sent() {
    let server = server();
    for queue in direct_and_piped(&server).await {
        let err = queue
            .add("big", &big(), JobOptions::new())
            .await
            .expect_err("2 MB is over the server's 1 MB");
        assert_too_large(&err, None, "big");
        assert_eq!(queue.count().await.unwrap(), 0, "nothing was written");
        queue
            .add("small", &json!({}), JobOptions::new())
            .await
            .unwrap();
        assert_eq!(waiting_names(&queue).await, ["small"]);
    }
}

#[tokio::test]
async fn a_bulk_with_a_job_over_proto_max_bulk_len_writes_nothing() {
    let server = server();
    for queue in direct_and_piped(&server).await {
        // More than one write batch (128 jobs), the big one in the second.
        let mut names: Vec<String> = (0..200).map(|i| format!("j{i:03}")).collect();
        names[150] = "big".to_owned();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let Err(Error::Bulk(failed)) = queue.add_bulk(bulk(&refs)).await else {
            panic!("the big job is refused")
        };
        assert!(
            failed.added.is_empty() && failed.unknown.is_none(),
            "{failed}"
        );
        assert_eq!(failed.refused.len(), 1, "{failed}");
        assert_eq!(failed.refused[0].index, Some(150));
        assert_too_large(&failed.refused[0].error, Some(150), "big");
        assert_eq!(failed.to_retry(), (0..200).collect::<Vec<_>>());
        assert!(
            failed
                .to_string()
                .starts_with("added 0 of 200 jobs; job 150 was refused (job 150 (big)"),
            "{failed}"
        );
        assert_eq!(
            queue.count().await.unwrap(),
            0,
            "nothing of the bulk was written"
        );

        // The retry without the big job adds every other job once.
        let rest = retry_without(&failed, 150, &refs);
        let added = queue.add_bulk(bulk(&rest)).await.unwrap();
        assert_eq!(added.len(), 199);
        let mut expected: Vec<String> = rest.iter().map(|s| (*s).to_owned()).collect();
        expected.sort();
        assert_eq!(waiting_names(&queue).await, expected);
    }
}

#[tokio::test]
async fn without_config_the_default_limit_applies_and_the_servers_refusal_is_typed() {
    let server = server();
    let mut admin = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("noconfig")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("+@all")
        .arg("-config")
        .query_async(&mut admin)
        .await
        .unwrap();
    let url = format!("redis://noconfig:pw@127.0.0.1:{}", server.port);
    let queue = queue_on(RedisOptions::new(url), "noconfig").await;
    // Small jobs never ask for the limit: nothing is refused.
    queue
        .add("small", &json!({}), JobOptions::new())
        .await
        .unwrap();
    let entries: Vec<redis::Value> = redis::cmd("ACL")
        .arg("LOG")
        .query_async(&mut admin)
        .await
        .unwrap();
    assert!(entries.is_empty(), "no CONFIG for small jobs: {entries:?}");
    // A big one asks, is refused `CONFIG`, and checks against 512 MB: the server refuses it.
    let err = queue
        .add("big", &big(), JobOptions::new())
        .await
        .expect_err("2 MB is over the server's 1 MB");
    let Error::Backend(inner) = &err else {
        panic!("{err:?}")
    };
    let redis_err = (&**inner as &(dyn std::error::Error + 'static))
        .downcast_ref::<RedisError>()
        .expect("a RedisError");
    assert_eq!(redis_err.refusal(), Some(Refusal::PayloadTooLarge), "{err}");
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Server), "{err}");
    assert_eq!(waiting_names(&queue).await, ["small"]);

    // In a bulk, the jobs the server ran are named as added, the big one as refused or
    // unknown: retrying the rest adds no job twice.
    let names = ["a", "b", "big", "c", "d"];
    let Err(Error::Bulk(failed)) = queue.add_bulk(bulk(&names)).await else {
        panic!("the big job is refused")
    };
    assert!(failed.added.iter().all(|a| a.index != 2), "{failed}");
    // (The server closes the connection on the big job: the jobs in flight are unknown, and
    // not retried.)
    let rest = retry_without(&failed, 2, &names);
    queue.add_bulk(bulk(&rest)).await.unwrap();
    let stored = waiting_names(&queue).await;
    for name in ["a", "b", "c", "d", "small"] {
        let times = stored.iter().filter(|s| s.as_str() == name).count();
        assert!(times <= 1, "{name} added {times} times: {stored:?}");
    }
    for added in &failed.added {
        assert!(
            stored.contains(&names[added.index].to_owned()),
            "{stored:?}"
        );
    }
}
