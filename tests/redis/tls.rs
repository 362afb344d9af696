//! `rediss://` (docs/RELIABILITY.md S2): a job goes through a TLS-only Redis whose certificate
//! a private CA signed, trusted through `RedisOptions::ca_certificate`; without that CA the
//! server is refused. Each test starts its own `redis-server --tls-port` with throwaway
//! certificates (the `openssl` command) and kills it on drop.

use crate::support::PrivateRedis;
use bullmq::BackendErrorKind;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{JobOptions, Queue, QueueName};
use serde_json::json;

fn tls_url(server: &PrivateRedis, host: &str) -> String {
    format!("rediss://{host}:{}", server.port)
}

fn ca_pem(server: &PrivateRedis) -> Vec<u8> {
    std::fs::read(server.dir.join("ca.crt")).expect("read ca.crt")
}

#[tokio::test]
async fn a_job_is_added_and_read_back_over_tls_with_a_private_ca() {
    let server = PrivateRedis::start_tls();
    let name = QueueName::new("tls").expect("name");
    let options = RedisOptions::new(tls_url(&server, "localhost")).ca_certificate(ca_pem(&server));
    let backend = RedisBackend::connect(&options, name.clone())
        .await
        .expect("connect over TLS");
    let q = Queue::try_new(name, backend).expect("the backend is bound to this queue");

    let added = q
        .add("secure", &json!({"card": "****"}), JobOptions::new())
        .await
        .expect("add over TLS");
    assert_eq!(added.id.as_str(), "1");
    let job = q
        .get_job(&added.id)
        .await
        .expect("get_job")
        .expect("stored");
    assert_eq!(job.name, "secure");
    assert_eq!(job.data, r#"{"card":"****"}"#);

    // Also by IP address: the certificate names 127.0.0.1 as well.
    let by_ip = RedisOptions::new(tls_url(&server, "127.0.0.1")).ca_certificate(ca_pem(&server));
    let q2 = Queue::try_new(
        QueueName::new("tls").expect("name"),
        RedisBackend::connect(&by_ip, QueueName::new("tls").expect("name"))
            .await
            .expect("connect by IP"),
    )
    .expect("the backend is bound to this queue");
    assert_eq!(q2.count().await.expect("count"), 1);
}

/// Connects with `options` to a server that answered but whose certificate is refused
/// (`why`): a connection error that does not ask whether Redis runs; its text.
async fn certificate_refused(options: &RedisOptions, why: &str) -> String {
    let err = RedisBackend::connect(options, QueueName::new("tls").expect("name"))
        .await
        .expect_err(why);
    assert_eq!(
        err.backend_kind(),
        Some(BackendErrorKind::Connection),
        "{err}"
    );
    let err = err.to_string();
    assert!(!err.contains("Is Redis running"), "{err}");
    err
}

#[tokio::test]
async fn an_untrusted_certificate_is_refused_by_default() {
    let server = PrivateRedis::start_tls();
    // Only the bundled public roots: the private CA is unknown.
    let options = RedisOptions::new(tls_url(&server, "localhost"));
    let why = "a certificate from an unknown CA must be refused";
    let err = certificate_refused(&options, why).await;
    assert!(err.contains("certificate"), "{err}");
    // The server answered: the advice is about the CA, not whether Redis runs.
    assert!(err.contains("ca_certificate"), "{err}");
}

#[tokio::test]
async fn a_host_name_the_certificate_does_not_name_is_refused() {
    let server = PrivateRedis::start_tls();
    // 127.0.0.2 reaches the same loopback server, but the certificate is not for it.
    let options = RedisOptions::new(tls_url(&server, "127.0.0.2")).ca_certificate(ca_pem(&server));
    let why = "a certificate for another host must be refused";
    certificate_refused(&options, why).await;
}

#[tokio::test]
async fn plain_redis_to_a_tls_port_fails_instead_of_hanging() {
    let server = PrivateRedis::start_tls();
    let name = QueueName::new("tls").expect("name");
    let options = RedisOptions::new(format!("redis://127.0.0.1:{}", server.port));
    let outcome = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        RedisBackend::connect(&options, name),
    )
    .await
    .expect("connect must give up, not hang");
    let err = outcome.expect_err("a TLS port does not speak plain RESP");
    assert!(err.backend_kind().is_some(), "{err}");
}

#[test]
fn the_password_in_the_url_never_reaches_debug_output() {
    let options = RedisOptions::new("rediss://app:hunter2@cache.internal:6380/0")
        .ca_certificate(b"-----BEGIN CERTIFICATE-----".to_vec());
    let shown = format!("{options:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(
        shown.contains("rediss://app:***@cache.internal:6380/0"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_wrong_password_fails_fast_and_is_not_echoed() {
    let server = PrivateRedis::start_with(|port, _| {
        vec![
            "--port".into(),
            port.to_string(),
            "--requirepass".into(),
            "right-horse".into(),
        ]
    });
    let name = || QueueName::new("auth").expect("name");
    let wrong = RedisOptions::new(format!("redis://:battery-staple@127.0.0.1:{}", server.port));
    let started = std::time::Instant::now();
    let err = RedisBackend::connect(&wrong, name())
        .await
        .expect_err("wrong password");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "took {:?}: the refusal was retried",
        started.elapsed()
    );
    assert_eq!(err.backend_kind(), Some(BackendErrorKind::Server), "{err}");
    assert!(!err.to_string().contains("battery-staple"), "{err}");
    assert!(!format!("{err:?}").contains("battery-staple"), "{err:?}");

    let right = RedisOptions::new(format!("redis://:right-horse@127.0.0.1:{}", server.port));
    let q = Queue::try_new(
        name(),
        RedisBackend::connect(&right, name())
            .await
            .expect("right password"),
    )
    .expect("the backend is bound to this queue");
    q.add("x", &json!({}), JobOptions::new())
        .await
        .expect("add");
    assert_eq!(q.count().await.expect("count"), 1);
}
