//! One binary, the store picked at run time from a URL: `bullmq::connect` and `ConnectOptions`
//! give an `AnyBackend` on Redis or on PostgreSQL by the URL's scheme, and a `Queue` and a
//! `Worker` over it add and process jobs end to end on each real store. Unknown schemes and
//! bad names are typed errors that never show the URL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use bullmq::{
    ActiveJob, AnyBackend, CancellationToken, ConnectError, ConnectOptions, JobOptions, JobState,
    Prefix, Queue, QueueName, Worker, WorkerOptions,
};
use serde_json::json;

use crate::support::postgres::{SchemaGuard, database_url};
use crate::support::wait::eventually;

/// Adds a job through `backend` and has a worker over the same kind of backend double it.
async fn add_and_process(backend: AnyBackend, worker_backend: AnyBackend) {
    let queue = Queue::try_new(QueueName::new("any").unwrap(), backend)
        .expect("the backend is bound to this queue");
    let job = queue
        .add("double", &json!({"n": 21}), JobOptions::new().attempts(2))
        .await
        .unwrap();
    let worker = Worker::new(
        QueueName::new("any").unwrap(),
        worker_backend,
        WorkerOptions::new()
            .name("any-w")
            .drain_delay(Duration::from_millis(200)),
        |job: ActiveJob<AnyBackend>, _: CancellationToken| async move {
            let data: serde_json::Value = job.data_as().unwrap();
            Ok(json!({"double": data["n"].as_u64().unwrap() * 2}))
        },
    )
    .await
    .unwrap();
    eventually("the job completed", Duration::from_secs(20), || async {
        queue.get_job_state(&job.id).await.unwrap() == Some(JobState::Completed)
    })
    .await;
    worker.close().await;
    let done = queue.get_job(&job.id).await.unwrap().unwrap();
    assert_eq!(done.return_value.as_deref(), Some(r#"{"double":42}"#));
    assert_eq!(done.processed_by.as_deref(), Some("any-w"));
}

#[tokio::test]
async fn a_redis_url_gives_a_redis_backend_that_adds_and_processes() {
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    let options = ConnectOptions::new(support::redis_url()).prefix(Prefix::new(&prefix).unwrap());
    let backend = options.connect("any").await.unwrap();
    assert!(matches!(backend, AnyBackend::Redis(_)));
    add_and_process(backend, options.connect("any").await.unwrap()).await;
    let mut redis = support::redis().await;
    let stored: Option<String> = redis::cmd("HGET")
        .arg(format!("{prefix}:any:1"))
        .arg("returnvalue")
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(stored.as_deref(), Some(r#"{"double":42}"#));
}

#[tokio::test]
async fn a_postgres_url_gives_a_postgres_backend_that_adds_and_processes() {
    let schema = SchemaGuard::new("any_backend");
    let options = ConnectOptions::new(database_url())
        .schema(schema.as_str())
        .migrate(true);
    let backend = options.connect("any").await.unwrap();
    assert!(matches!(backend, AnyBackend::Postgres(_)));
    add_and_process(backend, options.connect("any").await.unwrap()).await;
}

#[tokio::test]
async fn unknown_schemes_and_bad_names_are_typed_errors_without_the_url() {
    let err = bullmq::connect("mysql://root:hunter2@127.0.0.1/db", "q")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ConnectError::UnknownScheme { scheme } if scheme == "mysql"),
        "{err:?}"
    );
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let err = bullmq::connect("127.0.0.1:6379", "q").await.unwrap_err();
    assert!(matches!(&err, ConnectError::UnknownScheme { scheme } if scheme.is_empty()));
    let err = bullmq::connect(&support::redis_url(), "")
        .await
        .unwrap_err();
    assert!(matches!(err, ConnectError::Invalid(_)), "{err:?}");
    let err = ConnectOptions::new(database_url())
        .schema("no such; schema")
        .connect("q")
        .await
        .unwrap_err();
    assert!(matches!(err, ConnectError::Invalid(_)), "{err:?}");
    // A store that is not there: the backend's own error, still without the password.
    let err = bullmq::connect("postgres://u:hunter2@127.0.0.1:1/db", "q")
        .await
        .unwrap_err();
    assert!(matches!(err, ConnectError::Backend(_)), "{err:?}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

#[tokio::test]
async fn queue_names_lists_the_queues_with_a_meta_under_the_prefix_or_in_the_schema() {
    let prefix = support::unique_prefix();
    let _guard = support::PrefixGuard(prefix.clone());
    let other = support::unique_prefix();
    let _other_guard = support::PrefixGuard(other.clone());
    let schema = SchemaGuard::new("names");
    drop(schema.backend("setup").await);
    let redis = ConnectOptions::new(support::redis_url()).prefix(Prefix::new(&prefix).unwrap());
    let postgres = ConnectOptions::new(database_url()).schema(schema.as_str());
    for options in [&redis, &postgres] {
        let backend = options.connect("b").await.unwrap();
        assert_eq!(
            backend.queue_names().await.unwrap(),
            Vec::<QueueName>::new()
        );
        for name in ["b", "a", "c{x}"] {
            let queue = Queue::try_new(
                QueueName::new(name).unwrap(),
                options.connect(name).await.unwrap(),
            )
            .expect("the backend is bound to this queue");
            queue
                .add("j", &json!(1), JobOptions::default())
                .await
                .unwrap();
        }
        let names: Vec<String> = backend
            .queue_names()
            .await
            .unwrap()
            .iter()
            .map(|n| n.as_str().to_owned())
            .collect();
        assert_eq!(names, ["a", "b", "c{x}"]);
    }
    // Another prefix's queues, and keys that are not a queue's meta, are not listed.
    let elsewhere = ConnectOptions::new(support::redis_url()).prefix(Prefix::new(&other).unwrap());
    let queue = Queue::try_new(
        QueueName::new("z").unwrap(),
        elsewhere.connect("z").await.unwrap(),
    )
    .expect("the backend is bound to this queue");
    queue
        .add("j", &json!(1), JobOptions::default())
        .await
        .unwrap();
    let mut con = support::redis().await;
    let _: () = redis::cmd("SET")
        .arg(format!("{prefix}:not:a:queue:meta"))
        .arg(1)
        .query_async(&mut con)
        .await
        .unwrap();
    let names = redis
        .connect("b")
        .await
        .unwrap()
        .queue_names()
        .await
        .unwrap();
    assert_eq!(names.len(), 3, "{names:?}");
}
