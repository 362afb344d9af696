//! Only what is PostgreSQL-specific; the shared cases are the conformance suite's `blocking.rs`.
//!
//! `Blocking` and `Lifecycle` on PostgreSQL, end to end: a worker's wait wakes on upstream's
//! notifications (jobs added with upstream's `add_job`, run directly), times out, is cut short
//! by a delayed job or an interrupt, survives its `LISTEN` connection being killed, and the
//! dedicated connection carries the role's name in `pg_stat_activity`.

use crate::support;

use std::time::{Duration, Instant};

use crate::support::TestSchema;
use crate::support::jobs::AddJob;
use bullmq_core::backend::{Blocking, ClientRole, Lifecycle, NodeKey};
use bullmq_core::{Prefix, QueueName};
use bullmq_postgres::__private::sql::commands;
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx;
use serde_json::json;

/// A backend whose queue name is the schema's (unique on the server, which the connection
/// names in `pg_stat_activity` need: they are seen across databases and tests).
async fn backend(schema: &TestSchema) -> PostgresBackend {
    schema.backend(schema.as_str()).await
}

/// Adds a job with upstream's `add_job` (as Node.js' `addJob` runs it), `delay` ms from now.
async fn add_job(b: &PostgresBackend, id: &str, delay: i64) {
    let added = AddJob {
        data: json!({}),
        opts: json!({ "delay": delay, "attempts": 1 }),
        ..AddJob::new(id)
    }
    .add(b)
    .await;
    assert_eq!(added, id);
}

/// Runs `sql` with the queue's name as `$1`.
async fn on_queue(b: &PostgresBackend, sql: &str) {
    sqlx::query(sql)
        .bind(b.queue().as_str())
        .execute(b.connection().pool())
        .await
        .unwrap();
}

/// `pg_notify('bullmq_jobs', <queue>)` with no job behind it: only a listening wait hears it
/// (a look at the queue finds nothing).
async fn notify_jobs(b: &PostgresBackend) {
    on_queue(b, "SELECT pg_notify('bullmq_jobs', $1)").await;
}

/// Deletes the queue's jobs (so a later wait has nothing to find).
async fn clear_jobs(b: &PostgresBackend) {
    on_queue(b, "DELETE FROM job WHERE queue = $1").await;
}

/// The pids of the sessions named `name`.
async fn sessions(name: &str) -> Vec<i32> {
    let mut conn = support::admin().await;
    sqlx::query_scalar("SELECT pid FROM pg_stat_activity WHERE application_name = $1")
        .bind(name)
        .fetch_all(&mut conn)
        .await
        .unwrap()
}

/// Waits up to 10 s for the sessions named `name` to satisfy `ok`; returns them.
async fn sessions_until(name: &str, ok: impl Fn(&[i32]) -> bool) -> Vec<i32> {
    bullmq_test_support::eventually(
        &format!("the sessions named {name}"),
        Duration::from_secs(10),
        || async { ok(&sessions(name).await) },
    )
    .await;
    sessions(name).await
}

/// Kills the sessions named `name`; returns how many there were.
async fn terminate(name: &str) -> i64 {
    let mut conn = support::admin().await;
    sqlx::query_scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
    )
    .bind(name)
    .fetch_one(&mut conn)
    .await
    .unwrap()
}

/// Starts a wait in a task; returns it with its start.
fn spawn_wait(
    b: &PostgresBackend,
    timeout: Duration,
) -> tokio::task::JoinHandle<(Option<bullmq_core::backend::Marker>, Duration)> {
    let b = b.clone();
    tokio::spawn(async move {
        let start = Instant::now();
        let marker = b.wait_for_job(timeout).await.unwrap();
        (marker, start.elapsed())
    })
}

/// Starts a 20 s wait in a task and gives it 300 ms to begin waiting.
async fn started_wait(
    b: &PostgresBackend,
) -> tokio::task::JoinHandle<(Option<bullmq_core::backend::Marker>, Duration)> {
    let wait = spawn_wait(b, Duration::from_secs(20));
    // Gives the task time to begin its wait: nothing on the server shows a wait in progress
    // (the LISTEN connection is idle before, during and after one).
    tokio::time::sleep(Duration::from_millis(300)).await;
    wait
}

/// What `wait` returned, which it must within `within` (else a panic saying `what` it waited
/// for).
async fn ended(
    wait: tokio::task::JoinHandle<(Option<bullmq_core::backend::Marker>, Duration)>,
    within: Duration,
    what: &str,
) -> (Option<bullmq_core::backend::Marker>, Duration) {
    tokio::time::timeout(within, wait)
        .await
        .unwrap_or_else(|_| panic!("{what}"))
        .unwrap()
}

/// A 20 s wait ends at once (within `within`), with no marker.
async fn assert_refused(b: &PostgresBackend, within: Duration) {
    let start = Instant::now();
    assert_eq!(b.wait_for_job(Duration::from_secs(20)).await.unwrap(), None);
    assert!(start.elapsed() < within);
}

/// With a job waiting, a 20 s wait ends at once with a marker (its look finds the job).
async fn assert_a_waiting_job_ends_the_wait(b: &PostgresBackend) {
    let start = Instant::now();
    assert!(
        b.wait_for_job(Duration::from_secs(20))
            .await
            .unwrap()
            .is_some()
    );
    assert!(start.elapsed() < Duration::from_secs(2));
}

/// With the queue's jobs deleted, a bare notification (no job behind it) wakes a wait: only
/// the `LISTEN` can have heard it.
async fn assert_a_notification_wakes(b: &PostgresBackend, what: &str) {
    clear_jobs(b).await;
    let wait = started_wait(b).await;
    notify_jobs(b).await;
    let (marker, _) = ended(wait, Duration::from_secs(5), what).await;
    assert!(marker.is_some());
}

#[tokio::test]
async fn a_wait_wakes_on_a_job_added_and_on_a_notification() {
    let schema = TestSchema::new("blk_wake");
    let b = backend(&schema).await;
    let role = ClientRole::Worker { name: None };
    b.set_client_role(role).await.unwrap();

    let wait = started_wait(&b).await;
    assert!(!wait.is_finished(), "nothing to wake for yet");
    add_job(&b, "1", 0).await;
    let (marker, took) = ended(wait, Duration::from_secs(5), "woken by the add").await;
    let marker = marker.expect("a marker");
    assert_eq!(marker.score, 0);
    assert!(took < Duration::from_secs(5), "{took:?}");

    // A job already waiting ends the next wait at once.
    assert_a_waiting_job_ends_the_wait(&b).await;

    // A bare notification (no job): only the LISTEN can have woken the wait.
    assert_a_notification_wakes(&b, "woken by the notification").await;

    // Another queue's notification is not ours.
    let wait = spawn_wait(&b, Duration::from_millis(800));
    // Gives the task time to begin its wait (nothing on the server shows it).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let other = b.for_queue(&QueueName::new("other").unwrap(), None);
    notify_jobs(&other).await;
    let (marker, took) = wait.await.unwrap();
    assert_eq!(marker, None);
    assert!(took >= Duration::from_millis(800), "{took:?}");
}

#[tokio::test]
async fn a_channel_given_up_between_waits_is_listened_on_again() {
    let schema = TestSchema::new("blk_release");
    let b = backend(&schema).await;
    b.set_client_role(ClientRole::Worker { name: None })
        .await
        .unwrap();
    assert_a_notification_wakes(&b, "woken while listening").await;

    // No wait for longer than the listener keeps an unwanted channel (250 ms): it is given up
    // (a busy worker does not wait, and the server would signal it at every commit that
    // notifies). The next wait listens again before it relies on notifications.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_a_notification_wakes(&b, "woken after the channel was given up").await;

    // A job added while nobody listens is found by the next wait's look.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    add_job(&b, "1", 0).await;
    assert_a_waiting_job_ends_the_wait(&b).await;
}

#[tokio::test]
async fn a_wait_times_out_and_a_delayed_job_shortens_it() {
    let schema = TestSchema::new("blk_timeout");
    let b = backend(&schema).await;

    let start = Instant::now();
    assert_eq!(
        b.wait_for_job(Duration::from_millis(400)).await.unwrap(),
        None
    );
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(400), "{took:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");

    // Due in 1 s: the 20 s wait ends when it is due, with no marker (the fetch promotes it).
    let start = Instant::now();
    add_job(&b, "later", 1000).await;
    // `add_job` notifies even for a delayed job; let that notification arrive first (it would
    // wake the wait with a marker, as upstream's does); nothing shows it was delivered.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(b.wait_for_job(Duration::from_secs(20)).await.unwrap(), None);
    // Measured from before the add, so a slow add cannot make the wait look early.
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    // Already due: no wait at all.
    assert_refused(&b, Duration::from_secs(2)).await;
}

#[tokio::test]
async fn disconnect_blocking_ends_the_wait_and_refuses_the_next() {
    let schema = TestSchema::new("blk_interrupt");
    let b = backend(&schema).await;

    let wait = started_wait(&b).await;
    b.disconnect_blocking(true).await.unwrap();
    let (marker, took) = ended(wait, Duration::from_secs(3), "interrupted").await;
    assert_eq!(marker, None);
    assert!(took < Duration::from_secs(3), "{took:?}");

    // The flag outlives the wait it interrupted: a wait that raced the interrupt is refused.
    assert_refused(&b, Duration::from_secs(1)).await;

    // Refused before it began, too.
    b.disconnect_blocking(true).await.unwrap();
    assert_refused(&b, Duration::from_secs(1)).await;

    // After reconnecting, waits block again.
    b.disconnect_blocking(true).await.unwrap();
    b.reconnect_blocking().await.unwrap();
    let start = Instant::now();
    assert_eq!(
        b.wait_for_job(Duration::from_millis(400)).await.unwrap(),
        None
    );
    assert!(start.elapsed() >= Duration::from_millis(400));

    // `close` ends a wait too, and every later one.
    let wait = started_wait(&b).await;
    b.close(false).await.unwrap();
    assert!(b.is_closing());
    let (marker, _) = ended(wait, Duration::from_secs(3), "interrupted by close").await;
    assert_eq!(marker, None);
    b.reconnect_blocking().await.unwrap();
    assert_refused(&b, Duration::from_secs(1)).await;
}

#[tokio::test]
async fn waits_survive_the_listen_connection_being_killed() {
    let schema = TestSchema::new("blk_kill");
    let b = backend(&schema).await;
    let role = ClientRole::Worker {
        name: Some("k".to_owned()),
    };
    let name = b.client_name(&role);
    b.set_client_role(role).await.unwrap();
    let first = sessions(&name).await;
    assert_eq!(first.len(), 1, "one named LISTEN connection");

    // Killed mid-wait: the wait goes on (polling, then listening again) and sees a new job.
    let wait = started_wait(&b).await;
    assert_eq!(terminate(&name).await, 1);
    // A negative check, nothing to await: gives the wait time to (wrongly) end on the loss.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!wait.is_finished(), "a lost connection is no job");
    add_job(&b, "1", 0).await;
    let (marker, _) = ended(wait, Duration::from_secs(5), "the job is seen").await;
    assert!(marker.is_some());

    // The connection came back under the same name, and listens: a bare notification wakes.
    let again = sessions_until(&name, |p| p.len() == 1 && p != first.as_slice()).await;
    assert_eq!(again.len(), 1, "reconnected: {again:?} (was {first:?})");
    assert_ne!(again, first);
    assert_a_notification_wakes(&b, "woken by the notification after reconnecting").await;

    // Killed over and over while a job is added: notifications are missed, the job is not.
    let wait = spawn_wait(&b, Duration::from_secs(20));
    let killer = {
        let name = name.clone();
        tokio::spawn(async move {
            let until = Instant::now() + Duration::from_secs(2);
            while Instant::now() < until {
                terminate(&name).await;
                // Paces the kills (the fault this case simulates).
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
        })
    };
    // Lets several kills land before the add (the fault this case simulates).
    tokio::time::sleep(Duration::from_millis(500)).await;
    add_job(&b, "2", 0).await;
    let seen = "the job is seen while the connection keeps dropping";
    let (marker, _) = ended(wait, Duration::from_secs(5), seen).await;
    assert!(marker.is_some());
    killer.await.unwrap();
}

#[tokio::test]
async fn dedicated_connections_carry_the_role_name() {
    let schema = TestSchema::new("blk_names");
    let b = backend(&schema).await;
    let queue = b.queue().as_str().to_owned();
    let events = b.sibling(b.queue().clone());

    let worker = ClientRole::Worker {
        name: Some("w1".to_owned()),
    };
    assert_eq!(b.client_name(&worker), format!("{queue}:w:w1"));
    assert_eq!(
        b.client_name(&ClientRole::Worker { name: None }),
        queue.as_str()
    );
    assert_eq!(
        b.client_name(&ClientRole::QueueEvents),
        format!("{queue}:qe")
    );
    assert_eq!(b.client_name(&ClientRole::Queue), queue.as_str());

    b.set_client_role(worker).await.unwrap();
    events
        .set_client_role(ClientRole::QueueEvents)
        .await
        .unwrap();
    b.set_client_role(ClientRole::Queue).await.unwrap();
    assert_eq!(sessions(&format!("{queue}:w:w1")).await.len(), 1);
    assert_eq!(sessions(&format!("{queue}:qe")).await.len(), 1);
    assert!(sessions(&queue).await.is_empty(), "a queue names nothing");

    // Renaming replaces the connection.
    b.set_client_role(ClientRole::Worker {
        name: Some("w2".to_owned()),
    })
    .await
    .unwrap();
    assert_eq!(sessions(&format!("{queue}:w:w2")).await.len(), 1);
    let gone = sessions_until(&format!("{queue}:w:w1"), <[i32]>::is_empty).await;
    assert!(gone.is_empty());

    // Upstream's discovery reads them.
    let names: Vec<String> = sqlx::query_scalar(commands::GET_CLIENT_LIST.text)
        .fetch_all(b.connection().pool())
        .await
        .unwrap();
    assert!(names.contains(&format!("{queue}:w:w2")), "{names:?}");
    assert!(names.contains(&format!("{queue}:qe")), "{names:?}");

    // `disconnect` drops the connection; `close` too, for good.
    events.disconnect().await.unwrap();
    let gone = sessions_until(&format!("{queue}:qe"), <[i32]>::is_empty).await;
    assert!(gone.is_empty());
    assert!(!events.is_closing());
    b.close(true).await.unwrap();
    let gone = sessions_until(&format!("{queue}:w:w2"), <[i32]>::is_empty).await;
    assert!(gone.is_empty());
    assert!(b.set_client_role(ClientRole::QueueEvents).await.is_err());
}

#[tokio::test]
async fn identity_and_keys_follow_upstream() {
    let (_schema, b) = TestSchema::with_backend("blk_keys", "mail").await;
    b.wait_until_ready().await.unwrap();
    assert_eq!(b.qualified_name(), "mail");
    assert_eq!(b.to_key("42"), "mail:42");
    assert_eq!(
        b.parse_node_key("mail:42"),
        Some(NodeKey {
            prefix: String::new(),
            queue: "mail".to_owned(),
            id: "42".to_owned()
        })
    );
    assert_eq!(b.parse_node_key("plain"), None);
    let timeouts = b.block_timeouts();
    assert_eq!(timeouts.minimum, Duration::from_millis(1));
    assert_eq!(timeouts.maximum, Duration::from_secs(10));
    let prefix = Prefix::new("ignored").unwrap();
    let other = b.for_queue(&QueueName::new("other").unwrap(), Some(&prefix));
    assert_eq!(other.qualified_name(), "other");
    assert_eq!(other.connection().schema(), b.connection().schema());
}
