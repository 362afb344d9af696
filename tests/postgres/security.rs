//! PostgreSQL TLS and connect failures (issue 15, issue 12 item 6), each on a private cluster
//! (`initdb` + `pg_ctl`, see `support::pg_cluster`); the shared server is never reconfigured.
//!
//! - A cluster with `ssl = on`, a certificate from a CA the test makes with `openssl`, and a
//!   `pg_hba.conf` that admits TLS only (`hostssl`): `verify-full` runs the migrator, a producer
//!   and a worker (pool, lanes, `LISTEN`), every session TLS in `pg_stat_ssl`; a wrong CA and a
//!   wrong host name fail with typed TLS errors; `prefer` uses TLS; `disable` is refused with
//!   the `pg_hba.conf` advice; a client-certificate login works.
//! - The owner and runtime roles of docs/SECURITY.md, with passwords (`scram-sha-256`): the
//!   owner migrates, a producer and a worker run as the runtime role, which may not migrate.
//! - A cluster without TLS, few connection slots and password logins: `require` says the server
//!   has no TLS, a full server says so (53300), a wrong password says so (28P01).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use crate::support::pg_cluster::Cluster;
use crate::support::postgres::connect;
use crate::support::wait::eventually;
use bullmq::postgres::sqlx::{self, Connection as _};
use bullmq::postgres::{
    ConnectFailure, PostgresBackend, PostgresConnection, PostgresError, PostgresOptions,
    SchemaName, TlsFailure,
};
use bullmq::{JobOptions, Queue, QueueName, Worker, WorkerOptions};
use serde_json::json;

/// A fresh temporary folder.
fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{tag}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A queue and a worker on `options` (`who` connects): a job added to the one is completed by
/// the other. Answers both, the worker still running.
async fn completes_a_job(
    options: &PostgresOptions,
    queue: &str,
    opts: JobOptions,
    who: &str,
) -> (
    Queue<PostgresBackend>,
    Worker<PostgresBackend, impl bullmq::Processor<PostgresBackend>>,
) {
    let name = QueueName::new(queue).unwrap();
    let queue = Queue::try_new(
        name.clone(),
        PostgresBackend::connect(options, name.clone())
            .await
            .unwrap_or_else(|e| panic!("{who} connects (and migrates if asked): {e}")),
    )
    .expect("the backend is bound to this queue");
    let worker = Worker::new(
        name.clone(),
        PostgresBackend::connect(options, name.clone())
            .await
            .unwrap_or_else(|e| panic!("{who}: a worker's backend: {e}")),
        WorkerOptions::default(),
        |_job: bullmq::ActiveJob<PostgresBackend>, _| async { Ok(json!("done")) },
    )
    .await
    .expect("worker");
    worker.run().expect("run");
    let added = queue
        .add("j", &json!({"x": 1}), opts)
        .await
        .unwrap_or_else(|e| panic!("{who} adds: {e}"));
    eventually("the job completes", Duration::from_secs(20), || async {
        queue.job(added.id.clone()).get_state().await.unwrap() == Some(bullmq::JobState::Completed)
    })
    .await;
    (queue, worker)
}

/// Connects to `url`, which must fail with the class `expected`; the error's message.
async fn failure(url: &str, expected: ConnectFailure) -> String {
    let options = PostgresOptions::new(url).connect_timeout(Duration::from_secs(10));
    let err = PostgresConnection::connect(&options)
        .await
        .expect_err("the connection must be refused");
    let class = PostgresError::from_error(&err)
        .and_then(PostgresError::connect_failure)
        .unwrap_or_else(|| panic!("not a connect failure: {err:?}"));
    let message = err.to_string();
    assert_eq!(class, expected, "{message}");
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_on_a_hostssl_only_cluster() {
    let Some(cluster) = Cluster::init() else {
        return;
    };
    let certs = temp_dir("bullmq-pgtls");
    support::tls::make_test_certificates(&certs);
    // A v3 certificate (rustls refuses v1) for client authentication.
    support::tls::sign_with_ca(
        &certs,
        "client",
        "/CN=certuser",
        "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
    );
    let other_ca = temp_dir("bullmq-pgtls-other");
    support::tls::make_test_certificates(&other_ca);
    for name in ["server.crt", "server.key", "ca.crt"] {
        cluster.write_data_file(name, &std::fs::read(certs.join(name)).unwrap());
    }
    cluster.append_conf(
        "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n\
         ssl_ca_file = 'ca.crt'\nlisten_addresses = '127.0.0.1,127.0.0.2'",
    );
    cluster.write_data_file(
        "pg_hba.conf",
        b"local all all trust\n\
          hostssl all certuser 127.0.0.0/8 cert\n\
          hostssl all all 127.0.0.0/8 trust\n",
    );
    cluster.pg_ctl("start");
    let port = cluster.port;
    let ca = certs.join("ca.crt").display().to_string();
    let url =
        |host: &str, query: &str| format!("postgres://postgres@{host}:{port}/postgres?{query}");

    // verify-full: the migrator, a producer and a worker (pool, lanes, LISTEN), all over TLS.
    let full = url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let options = PostgresOptions::new(&full)
        .schema(SchemaName::new("tls").unwrap())
        .migrate(true);
    let (_queue, worker) = completes_a_job(&options, "tls", JobOptions::new(), "verify-full").await;
    let mut admin = connect(&full).await.expect("an admin session over TLS");
    let (plain, tls): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE NOT s.ssl), count(*) FILTER (WHERE s.ssl) \
         FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.backend_type = 'client backend'",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    let listening: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE s.ssl AND a.application_name LIKE 'tls%'",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(plain, 0, "every session is TLS");
    assert!(tls >= 3, "pool, lanes and LISTEN sessions: {tls}");
    assert!(listening >= 1, "the named LISTEN connection is TLS");
    worker.close().await;

    // A CA that did not sign the server's certificate.
    let other = other_ca.join("ca.crt").display().to_string();
    let message = failure(
        &url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={other}"),
        ),
        ConnectFailure::Tls(TlsFailure::UnknownCa),
    )
    .await;
    assert!(message.contains("sslrootcert"), "{message}");

    // A host name the certificate does not name; verify-ca checks only the CA.
    failure(
        &url(
            "127.0.0.2",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ),
        ConnectFailure::Tls(TlsFailure::NameMismatch),
    )
    .await;
    let by_ca = connect(&url(
        "localhost",
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    ))
    .await
    .expect("verify-ca with the right CA");
    by_ca.close().await.unwrap();
    // Known limitation (sqlx 0.8.6 with rustls 0.23.3x): sqlx's verify-ca verifier lets only
    // rustls' older `NotValidForName` through, not the `NotValidForNameContext` rustls reports
    // now, so verify-ca still checks the name: stricter than libpq, never weaker. This
    // assertion fails once sqlx lets it through; then expect a connection here.
    failure(
        &url("127.0.0.2", &format!("sslmode=verify-ca&sslrootcert={ca}")),
        ConnectFailure::Tls(TlsFailure::NameMismatch),
    )
    .await;

    // prefer takes the TLS the server offers.
    let preferred = PostgresConnection::connect(
        &PostgresOptions::new(url("localhost", "sslmode=prefer"))
            .schema(SchemaName::new("tls").unwrap()),
    )
    .await
    .expect("prefer connects");
    let ssl: bool = sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .fetch_one(preferred.pool())
        .await
        .unwrap();
    assert!(ssl, "prefer uses TLS when offered");
    preferred.close().await;

    // disable against hostssl only: refused, and told why.
    let message = failure(
        &url("localhost", "sslmode=disable"),
        ConnectFailure::NotAllowed,
    )
    .await;
    assert!(message.contains("hostssl"), "{message}");

    // A client-certificate login.
    sqlx::query("CREATE ROLE certuser LOGIN")
        .execute(&mut admin)
        .await
        .unwrap();
    let cert_url = format!(
        "postgres://certuser@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={ca}\
         &sslcert={}&sslkey={}",
        certs.join("client.crt").display(),
        certs.join("client.key").display()
    );
    let mut as_cert = connect(&cert_url)
        .await
        .expect("a client certificate logs in");
    let user: String = sqlx::query_scalar("SELECT current_user::text")
        .fetch_one(&mut as_cert)
        .await
        .unwrap();
    assert_eq!(user, "certuser");
    as_cert.close().await.unwrap();
    admin.close().await.unwrap();
    let _ = std::fs::remove_dir_all(&certs);
    let _ = std::fs::remove_dir_all(&other_ca);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_connect_failure_names_its_cause() {
    let Some(cluster) = Cluster::init() else {
        return;
    };
    cluster.append_conf("ssl = off\nmax_connections = 3\nsuperuser_reserved_connections = 0");
    cluster.start_with_passwords();
    let port = cluster.port;
    let base = format!("postgres://postgres@127.0.0.1:{port}/postgres");

    failure(
        &format!("{base}?sslmode=require"),
        ConnectFailure::Tls(TlsFailure::ServerWithoutTls),
    )
    .await;
    // A CA file that is not there is a bad file, not a server that does not run.
    let message = failure(
        &format!("{base}?sslmode=verify-full&sslrootcert=/nonexistent/bullmq-ca.pem"),
        ConnectFailure::Tls(TlsFailure::BadFile),
    )
    .await;
    assert!(!message.contains("running"), "{message}");

    let mut admin = connect(&base).await.unwrap();
    sqlx::query("CREATE ROLE bob LOGIN PASSWORD 'right'")
        .execute(&mut admin)
        .await
        .unwrap();
    let message = failure(
        &format!("postgres://bob:wrong@127.0.0.1:{port}/postgres"),
        ConnectFailure::Authentication,
    )
    .await;
    assert!(!message.contains("wrong"), "the password leaked: {message}");

    failure(
        &format!("postgres://postgres@127.0.0.1:{port}/nope"),
        ConnectFailure::UnknownDatabase,
    )
    .await;

    // Fill every slot: the next connection is told the server is full, not to check its
    // password.
    // The backends of the refused logins above may still hold their slots for a moment on a
    // loaded machine: take the free slots as they come back.
    let mut held = vec![admin];
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while held.len() < 3 {
        match connect(&base).await {
            Ok(conn) => held.push(conn),
            Err(_) if std::time::Instant::now() < deadline => {
                // Retry interval while a refused login's slot is freed.
                tokio::time::sleep(Duration::from_millis(100)).await; // a slot being freed
            }
            Err(err) => panic!("no free slot within 20 s: {err}"),
        }
    }
    let message = failure(&base, ConnectFailure::TooManyClients).await;
    assert!(message.contains("max_connections"), "{message}");
    assert!(!message.contains("pg_hba.conf"), "{message}");
    drop(held);

    cluster.pg_ctl("stop");
    failure(&base, ConnectFailure::Refused).await;
}

/// The statements of docs/SECURITY.md's role setup, with `tag` in every name.
fn documented_roles(tag: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/SECURITY.md"))
        .expect("docs/SECURITY.md");
    let start = doc.find("<!-- pg-roles -->").expect("the role block");
    let end = doc[start..].find("<!-- /pg-roles -->").expect("its end") + start;
    doc[start..end]
        .lines()
        .filter(|l| l.ends_with(';'))
        .map(|l| l.replace("bullmq", &format!("{tag}_bullmq")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_role_with_the_documented_grants_runs_producer_and_worker() {
    let Some(cluster) = Cluster::init() else {
        return;
    };
    cluster.start_with_passwords();
    let port = cluster.port;
    let mut admin = connect(&cluster.url()).await.unwrap();
    for statement in documented_roles("t") {
        sqlx::query(&statement)
            .execute(&mut admin)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let as_role = |role: &str, password: &str| {
        format!("postgres://{role}:{password}@127.0.0.1:{port}/postgres")
    };
    let schema = SchemaName::new("t_bullmq").unwrap();
    let owner =
        PostgresOptions::new(as_role("t_bullmq_owner", "owner-secret")).schema(schema.clone());
    bullmq::postgres::migrate(&owner)
        .await
        .expect("the owner migrates");

    // The runtime role: no migration, a producer and a worker.
    let app = PostgresOptions::new(as_role("t_bullmq_app", "app-secret")).schema(schema.clone());
    let (_queue, worker) = completes_a_job(
        &app,
        "roles",
        JobOptions::new().attempts(2),
        "the runtime role",
    )
    .await;
    worker.close().await;

    // The runtime role may not migrate: refused, and told who should.
    let err = bullmq::postgres::migrate(&app.clone().schema(SchemaName::new("other").unwrap()))
        .await
        .expect_err("the runtime role cannot create a schema");
    assert!(
        matches!(
            PostgresError::from_error(&err),
            Some(PostgresError::MigrationNotPermitted { .. })
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("owner role"), "{err}");
    admin.close().await.unwrap();
}
