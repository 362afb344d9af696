//! The application author's API: a queue named by its backend (and a mismatch refused, typed),
//! what generic code needs reachable from the facade, typed instants, and the former names
//! still building behind their deprecation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::{Duration, UNIX_EPOCH};

use bullmq::options::UnixMillis;
use bullmq::prelude::*;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{Prefix, RepeatOptions};

async fn redis_backend(prefix: &str, queue: &str) -> RedisBackend {
    let options = RedisOptions::new(support::redis_url()).prefix(Prefix::new(prefix).unwrap());
    RedisBackend::connect(&options, QueueName::new(queue).unwrap())
        .await
        .unwrap()
}

/// Generic over the store with nothing but the prelude's `Backend`.
async fn add_one<B: Backend>(queue: &Queue<B>) -> Result<JobId> {
    let job = queue
        .add(
            "greet",
            &serde_json::json!({"to": "ada"}),
            JobOptions::new(),
        )
        .await?;
    Ok(job.id)
}

#[tokio::test]
async fn a_queue_takes_its_name_from_its_backend_and_refuses_another() {
    let prefix = support::PrefixGuard::new();
    let queue = Queue::from_backend(redis_backend(prefix.as_str(), "mails").await).unwrap();
    assert_eq!(queue.name().as_str(), "mails");
    let id = add_one(&queue).await.unwrap();
    assert!(queue.get_job(&id).await.unwrap().is_some());

    let agreeing = Queue::try_new(
        QueueName::new("mails").unwrap(),
        redis_backend(prefix.as_str(), "mails").await,
    );
    assert!(agreeing.is_ok());
    let Err(Error::Invalid(err)) = Queue::try_new(
        QueueName::new("invoices").unwrap(),
        redis_backend(prefix.as_str(), "mails").await,
    ) else {
        panic!("a name the backend does not hold was accepted");
    };
    assert_eq!(err.problems()[0].path, "name");
    assert!(
        err.problems()[0]
            .message
            .contains("bound to queue `mails`, not `invoices`"),
        "{err}"
    );
}

#[test]
fn instants_are_typed_and_iso_text_is_read() {
    let repeat = RepeatOptions::cron("0 3 * * *")
        .start_date_iso("2030-01-31T09:00:00Z")
        .unwrap()
        .end_date(bullmq::chrono::DateTime::from_timestamp_millis(1_900_000_000_000).unwrap());
    assert_eq!(repeat.start_at().unwrap().get(), 1_896_080_400_000);
    assert_eq!(repeat.end_at().unwrap().get(), 1_900_000_000_000);
    let refused = RepeatOptions::cron("0 3 * * *")
        .end_date_iso("31/01/2030")
        .unwrap_err();
    assert!(refused.to_string().contains("ISO 8601"), "{refused}");

    let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
    assert_eq!(
        JobError::delay_until(at),
        JobError::Delay {
            until: 1_700_000_000_000
        }
    );
    assert_eq!(
        UnixMillis::from(at),
        "2023-11-14T22:13:20Z".parse::<UnixMillis>().unwrap()
    );
}

#[test]
fn the_json_helpers_write_and_read_as_node_does() {
    let text = bullmq::json::to_string(&serde_json::json!({"b": 1e21, "1": true})).unwrap();
    assert_eq!(text, r#"{"1":true,"b":1e+21}"#);
    assert_eq!(
        bullmq::json::js_view(r#"{"b":1,"2":2}"#),
        r#"{"2":2,"b":1}"#
    );
}

#[test]
#[allow(deprecated)]
fn former_names_still_build() {
    assert_eq!(KeepJobs::Newest(5), KeepJobs::Number(5));
    let opts: bullmq::core::JobOptions = bullmq::core::JobOptions::new().attempts(2);
    assert_eq!(opts.attempts, Some(2));
    let _: Option<bullmq::core::backend::LockToken> = None;
}
