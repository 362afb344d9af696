//! No password is ever printed (issue 15): every URL form either backend accepts, with a
//! password in it, goes through `Debug` of the options and the backends, `Display` and `Debug`
//! of the connect errors, and everything logged through `tracing` meanwhile; the password is
//! in none of them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::support::PrivateRedis;
use bullmq::postgres::{PostgresBackend, PostgresOptions};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{Queue, QueueName};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const SECRET: &str = "s3cretPW";

/// Every field of every span and event, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<String>>);

impl Visit for &Captured {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let mut log = self.0.lock().unwrap();
        let _ = write!(log, "{}={value:?} ", field.name());
    }
}

impl Subscriber for Captured {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        span.record(&mut &*self);
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        values.record(&mut &*self);
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        event.record(&mut &*self);
        self.0.lock().unwrap().push('\n');
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The process-wide log capture (installed once).
fn logs() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let captured = Captured::default();
        tracing::subscriber::set_global_default(captured.clone()).expect("one subscriber");
        captured
    })
}

fn assert_hidden(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the password: {text}");
}

#[tokio::test]
async fn no_password_in_debug_display_errors_or_logs() {
    let logs = logs();
    let server = PrivateRedis::start();
    let mut admin = server.admin().await;
    let () = redis::cmd("ACL")
        .arg(
            &[
                "SETUSER",
                "alice",
                "on",
                &format!(">{SECRET}"),
                "~*",
                "+@all",
                "-info",
            ][..],
        )
        .query_async(&mut admin)
        .await
        .unwrap();
    let port = server.port;
    let q = || QueueName::new("redact").unwrap();

    // Redis: refused, wrong password, unreadable and working URLs of every form.
    let redis_urls = [
        format!("redis://:{SECRET}@127.0.0.1:1"),
        format!("redis://alice:{SECRET}x@127.0.0.1:{port}"),
        format!("rediss://alice:{SECRET}@127.0.0.1:1"),
        format!("valkey://alice:{SECRET}@127.0.0.1:1"),
        format!("redis+unix:///nonexistent/redis.sock?pass={SECRET}"),
        format!("unix:///nonexistent/redis.sock?user=alice&pass={SECRET}"),
        format!("redis://:{SECRET}@"),
        format!("redis://alice:{SECRET}@127.0.0.1:{port}"),
        format!("redis+cluster://alice:{SECRET}@127.0.0.1:1,127.0.0.1:2/"),
        format!(
            "redis+sentinel://alice:{SECRET}@127.0.0.1:1/mymaster?sentinel_username=sam&sentinel_password={SECRET}"
        ),
    ];
    for url in &redis_urls {
        let mut options = RedisOptions::new(url.as_str()).response_timeout(Duration::from_secs(2));
        if url.contains("+cluster") {
            // A cluster needs the queue's keys in one slot; the connect is what is tested.
            options = options.prefix(bullmq::Prefix::new("{redact}").unwrap());
        }
        assert_hidden("RedisOptions Debug", &format!("{options:?}"));
        match RedisBackend::connect(&options, q()).await {
            Ok(backend) => {
                assert_hidden("RedisBackend Debug", &format!("{backend:?}"));
                let queue = Queue::new(q(), backend);
                assert_hidden("Queue Debug", &format!("{queue:?}"));
                queue.count().await.expect("works as alice");
            }
            Err(err) => {
                assert!(err.to_string().starts_with("backend error: redis"), "{err}");
                assert_hidden("Redis error Display", &err.to_string());
                assert_hidden("Redis error Debug", &format!("{err:?}"));
            }
        }
    }

    // PostgreSQL: refused, unreadable and (trust authentication ignores the password)
    // working URLs of every form.
    let shared = support::postgres::database_url();
    let (_, after_scheme) = shared.split_once("://").unwrap();
    let host_and_db = after_scheme
        .rsplit_once('@')
        .map_or(after_scheme, |(_, rest)| rest);
    let pg_urls = [
        format!("postgres://bob:{SECRET}@127.0.0.1:1/app"),
        format!("postgresql://bob@127.0.0.1:1/app?password={SECRET}"),
        format!("postgres://127.0.0.1:1/app?user=bob&password={SECRET}&sslmode=disable"),
        format!("postgres://bob:{SECRET}@[bad/app"),
        format!("postgres://postgres:{SECRET}@{host_and_db}"),
    ];
    for url in &pg_urls {
        let options = PostgresOptions::new(url.as_str())
            .connect_timeout(Duration::from_secs(3))
            .migrate(true);
        assert_hidden("PostgresOptions Debug", &format!("{options:?}"));
        match PostgresBackend::connect(&options, q()).await {
            Ok(backend) => {
                assert_hidden("PostgresBackend Debug", &format!("{backend:?}"));
                let queue = Queue::new(q(), backend);
                queue.count().await.expect("works");
            }
            Err(err) => {
                assert!(err.to_string().contains("postgres"), "{err}");
                assert_hidden("PostgreSQL error Display", &err.to_string());
                assert_hidden("PostgreSQL error Debug", &format!("{err:?}"));
            }
        }
    }
    let captured = logs.0.lock().unwrap().clone();
    // Something was logged: alice may not run INFO, which the backend warns about.
    assert!(captured.contains("may not run INFO"), "{captured}");
    assert_hidden("the log", &captured);
}
