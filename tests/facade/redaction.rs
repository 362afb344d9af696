//! No password is ever printed (issues 15 and 22): every URL form either backend accepts, with
//! a password in it (userinfo, query keys plain, in another case and percent-encoded, values
//! percent-encoded, raw `@`, `/`, `?`, `#`), goes through `Debug` of the options and the
//! backends, `redact_url`, `Display` and `Debug` of the connect errors (unreachable, wrong
//! password, refused URL), and everything logged meanwhile at TRACE through `tracing` and
//! `log` (redis-rs's and sqlx's targets included); the password is in none of them.

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

/// Every password below holds this between any two characters a URL could split it at, so
/// that no piece of any of them can be printed unnoticed.
const MARK: &str = "QX";

/// Passwords as written in a URL: plain, percent-encoded, and with raw specials.
const PASSWORDS: [&str; 8] = [
    "QXs3cretQX",
    "QX%73%33cretQX",
    "QX%2F%3F%23%40QX",
    "QX@s3cr@QX",
    "QX/s3cQX",
    "QX?s3cQX",
    "QX#s3cQX",
    "QXp@QXss/QXw?QXrd#QX.QX",
];

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
        let _ = write!(self.0.lock().unwrap(), "[{}] ", event.metadata().target());
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
        log::set_logger(Box::leak(Box::new(LogCapture(captured.clone())))).expect("one logger");
        log::set_max_level(log::LevelFilter::Trace);
        captured
    })
}

fn assert_hidden(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the password: {text}");
    assert!(
        !text.contains(MARK),
        "{what} shows part of a password: {text}"
    );
}

/// `log` records (redis-rs and sqlx log through it) into the same capture.
struct LogCapture(Captured);

impl log::Log for LogCapture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        let mut log = self.0.0.lock().unwrap();
        let _ = writeln!(log, "[log {}] {}", record.target(), record.args());
    }
    fn flush(&self) {}
}

/// The queue every connect here is for.
fn q() -> QueueName {
    QueueName::new("redact").unwrap()
}

/// What connecting to `store` gave, with no trace of the secret in it: a backend (its `Debug`,
/// and a queue on it, which must work) or the error (its `Display` and `Debug`), returned for
/// the caller's store-specific check.
async fn connect_hiding_the_secret<B>(
    store: &str,
    connected: Result<B, bullmq::Error>,
) -> Option<bullmq::Error>
where
    B: bullmq::backend::Backend + std::fmt::Debug,
{
    match connected {
        Ok(backend) => {
            assert_hidden(&format!("{store} backend Debug"), &format!("{backend:?}"));
            let queue = Queue::try_new(q(), backend).expect("the backend is bound to this queue");
            assert_hidden("Queue Debug", &format!("{queue:?}"));
            queue.count().await.expect("works");
            None
        }
        Err(err) => {
            assert_hidden(&format!("{store} error Display"), &err.to_string());
            assert_hidden(&format!("{store} error Debug"), &format!("{err:?}"));
            Some(err)
        }
    }
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
        let connected = RedisBackend::connect(&options, q()).await;
        if let Some(err) = connect_hiding_the_secret("Redis", connected).await {
            assert!(err.to_string().starts_with("backend error: redis"), "{err}");
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
        let connected = PostgresBackend::connect(&options, q()).await;
        if let Some(err) = connect_hiding_the_secret("PostgreSQL", connected).await {
            assert!(err.to_string().contains("postgres"), "{err}");
        }
    }
    let captured = logs.0.lock().unwrap().clone();
    // Something was logged: alice may not run INFO, which the backend warns about.
    assert!(captured.contains("may not run INFO"), "{captured}");
    // sqlx's own targets are captured too (its statements, logged at DEBUG/TRACE).
    assert!(captured.contains("[sqlx"), "{captured}");
    assert_hidden("the log", &captured);
}

/// The Redis URL forms, with `password` as written and the hosts given.
fn redis_forms(password: &str, host: &str, other: &str) -> Vec<String> {
    let p = password;
    vec![
        format!("redis://:{p}@{host}"),
        format!("redis://alice:{p}@{host}/0"),
        format!("rediss://alice:{p}@{host}"),
        format!("valkey://alice:{p}@{host}/1?protocol=3"),
        format!("redis+cluster://alice:{p}@{host},{other}/"),
        format!("redis+sentinel://alice:{p}@{host}/mymaster?sentinel_password={p}"),
    ]
}

/// The forms with the password in the query, where only plain or percent-encoded values fit.
fn redis_query_forms(p: &str, host: &str) -> Vec<String> {
    vec![
        format!("redis://{host}/?pass={p}"),
        format!("redis+sentinel://{host}/m?sentinel_username=sam&sentinel_password={p}"),
        format!("redis+sentinel://{host}/m?sentinel%5Fpassword={p}"),
        format!("redis+sentinel://{host}/m?Sentinel_Password={p}"),
        format!("redis+unix:///nonexistent/redis.sock?pass={p}"),
        format!("redis+unix:///nonexistent/redis.sock?pa%73s={p}"),
        format!("unix:///nonexistent/redis.sock?user=alice&%70ass={p}"),
        format!("unix:///nonexistent/redis.sock?PASS={p}&db=1"),
        format!("redis+unix:///nonexistent/redis.sock?pass={p}#tail"),
    ]
}

fn pg_forms(p: &str, host: &str) -> Vec<String> {
    vec![
        format!("postgres://bob:{p}@{host}/postgres"),
        format!("postgresql://bob:{p}@{host}/postgres?sslmode=disable"),
    ]
}

fn pg_query_forms(p: &str, host: &str) -> Vec<String> {
    vec![
        format!("postgres://bob@{host}/postgres?password={p}"),
        format!("postgres://{host}/postgres?user=bob&passw%6Frd={p}&sslmode=disable"),
        format!("postgres://bob@{host}/postgres?PASSWORD={p}"),
        format!("postgres://bob@{host}/postgres?sslpassword={p}"),
        format!("postgres://bob@{host}/postgres?ssl%70assword={p}"),
        format!("postgres://bob@{host}/postgres?application_name=x&password={p}#tail"),
        format!("host={host} user=bob password={p}"),
    ]
}

/// Every form, on both stores, against a free port and a server that refuses the password:
/// no piece of any password in `Debug`, `redact_url`, the errors or the logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_piece_of_any_password_in_any_url_form() {
    let logs = logs();
    let locked = PrivateRedis::start_with(|port, _| {
        ["--port", &port.to_string(), "--requirepass", "right-one"]
            .map(str::to_owned)
            .to_vec()
    });
    let free = format!("127.0.0.1:{}", support::free_port());
    let locked_at = format!("127.0.0.1:{}", locked.port);
    let other = format!("127.0.0.1:{}", support::free_port());

    let mut redis_urls = Vec::new();
    for host in [&free, &locked_at] {
        for p in PASSWORDS {
            redis_urls.extend(redis_forms(p, host, &other));
        }
        for p in &PASSWORDS[..3] {
            redis_urls.extend(redis_query_forms(p, host));
        }
    }
    let mut refused_for_the_password = 0;
    for url in &redis_urls {
        let shown = bullmq::redact_url(url);
        assert_hidden("redact_url", &shown);
        let mut options = RedisOptions::new(url.as_str()).response_timeout(Duration::from_secs(2));
        if url.contains("+cluster") {
            options = options.prefix(bullmq::Prefix::new("{redact}").unwrap());
        }
        assert_hidden("RedisOptions Debug", &format!("{options:?}"));
        let err = RedisBackend::connect(&options, q())
            .await
            .expect_err("no form reaches a queue");
        let text = err.to_string();
        assert_hidden(&format!("Redis error Display for {shown}"), &text);
        assert_hidden("Redis error Debug", &format!("{err:?}"));
        if text.contains("credentials") || text.contains("WRONGPASS") {
            refused_for_the_password += 1;
        }
    }
    // The locked server was reached, and said no to the password.
    assert!(refused_for_the_password >= 8, "{refused_for_the_password}");

    // PostgreSQL: a free port, and a private cluster where bob logs in with a password.
    let cluster = PasswordCluster::start();
    let mut pg_hosts = vec![free.clone()];
    pg_hosts.extend(cluster.as_ref().map(|c| format!("127.0.0.1:{}", c.0.port)));
    let mut pg_urls = Vec::new();
    for host in &pg_hosts {
        for p in PASSWORDS {
            pg_urls.extend(pg_forms(p, host));
        }
        for p in &PASSWORDS[..3] {
            pg_urls.extend(pg_query_forms(p, host));
        }
    }
    let mut authentication_failed = 0;
    for url in &pg_urls {
        assert_hidden("redact_url", &bullmq::redact_url(url));
        let options = PostgresOptions::new(url.as_str()).connect_timeout(Duration::from_secs(3));
        assert_hidden("PostgresOptions Debug", &format!("{options:?}"));
        let err = PostgresBackend::connect(&options, q())
            .await
            .expect_err("no form reaches a queue");
        let text = err.to_string();
        assert_hidden("PostgreSQL error Display", &text);
        assert_hidden("PostgreSQL error Debug", &format!("{err:?}"));
        if text.contains("authentication failed") {
            authentication_failed += 1;
        }
    }
    if cluster.is_some() {
        assert!(authentication_failed >= 4, "{authentication_failed}");
    }
    let total = redis_urls.len() + pg_urls.len();
    assert!(total >= 60, "{total} forms");
    eprintln!(
        "{total} forms: {} Redis ({refused_for_the_password} refused by the server for the \
         password), {} PostgreSQL ({authentication_failed} failed authentication)",
        redis_urls.len(),
        pg_urls.len()
    );

    let captured = logs.0.lock().unwrap().clone();
    assert_hidden("the log", &captured);
}

/// A private PostgreSQL cluster where `bob` must give a password (scram-sha-256).
struct PasswordCluster(support::pg_cluster::Cluster);

impl PasswordCluster {
    fn start() -> Option<Self> {
        let cluster = support::pg_cluster::Cluster::init()?;
        cluster.start_with_passwords();
        let url = cluster.url();
        std::thread::spawn(move || {
            tokio::runtime::Runtime::new().unwrap().block_on(async {
                use bullmq::postgres::sqlx::{self, Connection as _};
                let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
                sqlx::query("CREATE ROLE bob LOGIN PASSWORD 'right-one'")
                    .execute(&mut admin)
                    .await
                    .unwrap();
            });
        })
        .join()
        .unwrap();
        Some(Self(cluster))
    }
}
