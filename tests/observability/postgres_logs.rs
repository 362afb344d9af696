//! PostgreSQL connection loss and recovery are logged: a WARN when the command lanes or the
//! `LISTEN` connection are lost, an INFO when they work again (the reconnection in a
//! `reconnect` span), naming the server without its password. Only this test's own sessions
//! (found by their `application_name`) are terminated on the shared server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::time::Duration;

use crate::capture::Captured;
use bullmq::backend::{ClientRole, Lifecycle as _};
use bullmq::postgres::{PostgresBackend, PostgresOptions};
use bullmq::{JobOptions, Queue, QueueEvents, QueueEventsOptions, QueueName};
use serde_json::json;

use crate::support::postgres::{SchemaGuard, admin, database_url, terminate};

#[tokio::test(flavor = "current_thread")]
async fn a_terminated_connection_warns_and_its_recovery_is_logged() {
    let (captured, _guard) = Captured::start();
    let guard = SchemaGuard::new("obs_pgnet");
    let pool_app = format!("obsnet{}", &guard.as_str()[10..22]);
    let url = format!(
        "{}{}application_name={pool_app}",
        database_url(),
        if database_url().contains('?') {
            '&'
        } else {
            '?'
        }
    );
    let queue_name = QueueName::new(format!("obs-net-{pool_app}")).unwrap();
    let backend = PostgresBackend::connect(
        &PostgresOptions::new(url)
            .schema(guard.name().clone())
            .migrate(true),
        queue_name.clone(),
    )
    .await
    .expect("connect");
    let listen_app = backend.client_name(&ClientRole::QueueEvents);
    let queue =
        Queue::try_new(queue_name, backend.clone()).expect("the backend is bound to this queue");
    let events = QueueEvents::new(backend, QueueEventsOptions::default()).unwrap();
    events.wait_until_ready().await.unwrap();
    queue
        .add("before", &json!({}), JobOptions::new())
        .await
        .unwrap();

    let mut admin = admin().await;
    let killed = terminate(&mut admin, &pool_app).await + terminate(&mut admin, &listen_app).await;
    assert!(killed >= 2, "the lane and the LISTEN connection: {killed}");
    support::wait::added_again(&queue, "after").await;
    support::wait::eventually(
        "the LISTEN connection is back",
        Duration::from_secs(20),
        || async {
            captured
                .events()
                .iter()
                .any(|e| e.message() == "postgres LISTEN connection recovered")
        },
    )
    .await;
    events.close().await;

    for what in ["connection", "LISTEN connection"] {
        captured.assert_loss_logged(
            &format!("postgres {what} lost"),
            &format!("postgres {what} recovered"),
            |server| server.starts_with("postgres://") && !server.contains("password"),
        );
    }
    // The reconnections run in `reconnect` spans: the lane's and the LISTEN connection's.
    let reconnects = captured
        .spans()
        .iter()
        .filter(|s| s.name == "reconnect")
        .count();
    assert!(reconnects >= 2, "{:?}", captured.spans());
}
