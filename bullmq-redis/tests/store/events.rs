//! Only what is Redis-specific; the shared cases are the conformance suite's `events.rs`.
//!
//! `Events` on the real Redis: the `events` stream as `XADD`/`XTRIM` leave it, and `XREAD`
//! on its own connection, which a worker's `BZPOPMIN` does not hold up.

use crate::support::readers as support;

use std::time::Duration;

use bullmq_core::backend::{Blocking, ClientRole, EventId, Events, Lifecycle, StreamEvent};
use bullmq_core::{Error, JobOptions};
use bullmq_redis::RedisBackend;
use support::{Ctx, blocked_in};
use tokio::task::JoinHandle;

fn fields(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A `QueueEvents` read of new entries on `b`, waiting up to `wait`, started and seen blocked
/// in `XREAD`; with the name of the connection it blocks.
async fn blocked_read(
    b: &RedisBackend,
    wait: Duration,
) -> (String, JoinHandle<bullmq_core::Result<Vec<StreamEvent>>>) {
    b.set_client_role(ClientRole::QueueEvents).await.unwrap();
    let name = b.client_name(&ClientRole::QueueEvents);
    let reader = tokio::spawn({
        let b = b.clone();
        async move { b.read_events(&EventId::latest(), wait).await }
    });
    blocked_in(&name, "xread").await;
    (name, reader)
}

#[tokio::test]
async fn publish_event_appends_the_fields_in_order() {
    let ctx = Ctx::new().await;
    let sent = [
        ("event", "custom".to_owned()),
        ("jobId", "7".to_owned()),
        ("data", r#"{"a":1}"#.to_owned()),
    ];
    let id = ctx.backend.publish_event(&sent, 100).await.unwrap();
    let entries: Vec<(String, Vec<String>)> = ctx.cmd(
        redis::cmd("XRANGE")
            .arg(ctx.key("events"))
            .arg("-")
            .arg("+"),
    );
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].0, id.as_str());
    assert_eq!(
        entries[0].1,
        ["event", "custom", "jobId", "7", "data", r#"{"a":1}"#]
    );
}

#[tokio::test]
async fn publish_event_keeps_about_max_events() {
    let ctx = Ctx::new().await;
    for n in 0..300 {
        let _ = ctx
            .backend
            .publish_event(&[("event", n.to_string())], 10)
            .await
            .unwrap();
    }
    // `~` trims whole stream nodes only: fewer than were written, at least the ten asked.
    let len: u64 = ctx.cmd(redis::cmd("XLEN").arg(ctx.key("events")));
    assert!((10..300).contains(&len), "{len}");
}

#[tokio::test]
async fn trim_events_drops_the_oldest_whole_nodes() {
    let ctx = Ctx::new().await;
    let mut fill = redis::cmd("EVAL");
    fill.arg("for i = 1, 250 do redis.call('XADD', KEYS[1], '*', 'event', i) end")
        .arg(1)
        .arg(ctx.key("events"));
    let () = ctx.cmd(&fill);
    let removed = ctx.backend.trim_events(10).await.unwrap();
    let len: u64 = ctx.cmd(redis::cmd("XLEN").arg(ctx.key("events")));
    assert_eq!(removed + len, 250);
    assert!(removed > 0 && len >= 10, "removed {removed}, left {len}");
    let first: Vec<(String, Vec<String>)> = ctx.cmd(
        redis::cmd("XRANGE")
            .arg(ctx.key("events"))
            .arg("-")
            .arg("+")
            .arg("COUNT")
            .arg(1),
    );
    // The newest entries stay.
    assert_eq!(first[0].1[1], (250 - len + 1).to_string());
}

#[tokio::test]
async fn read_events_returns_the_entries_after_an_id() {
    let ctx = Ctx::new().await;
    let b = &ctx.backend;
    let mut ids = Vec::new();
    for (event, job) in [("added", "1"), ("waiting", "1"), ("completed", "1")] {
        let id = b
            .publish_event(
                &[("event", event.to_owned()), ("jobId", job.to_owned())],
                100,
            )
            .await
            .unwrap();
        ids.push(id);
    }
    let all = b
        .read_events(&EventId::new("0"), Duration::from_millis(100))
        .await
        .unwrap();
    let got: Vec<_> = all
        .iter()
        .map(|e| (e.id.clone(), e.fields.clone()))
        .collect();
    assert_eq!(
        got,
        [
            (
                ids[0].clone(),
                fields(&[("event", "added"), ("jobId", "1")])
            ),
            (
                ids[1].clone(),
                fields(&[("event", "waiting"), ("jobId", "1")])
            ),
            (
                ids[2].clone(),
                fields(&[("event", "completed"), ("jobId", "1")])
            ),
        ]
    );
    let rest = b
        .read_events(&ids[1], Duration::from_millis(100))
        .await
        .unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].id, ids[2]);
    // Nothing new: the wait runs out, empty.
    // (A liveness bound, not a timing assertion: a 50 ms wait must end.)
    let none = tokio::time::timeout(
        Duration::from_secs(10),
        b.read_events(&ids[2], Duration::from_millis(50)),
    )
    .await
    .expect("the wait runs out")
    .unwrap();
    assert!(none.is_empty());
    // A zero wait does not block at all.
    assert!(
        b.read_events(&ids[2], Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn read_events_from_latest_waits_for_a_new_entry() {
    let ctx = Ctx::new().await;
    let b = ctx.backend.clone();
    b.publish_event(&[("event", "old".to_owned())], 100)
        .await
        .unwrap();
    let (_, reader) = blocked_read(&b, Duration::from_secs(5)).await;
    let id = b
        .publish_event(&[("event", "new".to_owned())], 100)
        .await
        .unwrap();
    let events = tokio::time::timeout(Duration::from_secs(2), reader)
        .await
        .expect("the read returns once an entry is added")
        .unwrap()
        .unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].id, id);
    assert_eq!(events[0].fields, fields(&[("event", "new")]));
}

#[tokio::test]
async fn a_worker_wait_and_an_events_read_do_not_hold_each_other_up() {
    let ctx = Ctx::new().await;
    // A worker and a QueueEvents on clones of one backend.
    let worker = ctx.backend.clone();
    let events = ctx.backend.clone();
    worker
        .set_client_role(ClientRole::Worker {
            name: Some("w".to_owned()),
        })
        .await
        .unwrap();
    events
        .set_client_role(ClientRole::QueueEvents)
        .await
        .unwrap();
    let waiting = tokio::spawn({
        let worker = worker.clone();
        async move { worker.wait_for_job(Duration::from_secs(5)).await }
    });
    let reading = tokio::spawn({
        let events = events.clone();
        async move {
            events
                .read_events(&EventId::latest(), Duration::from_secs(5))
                .await
        }
    });
    blocked_in(
        &worker.client_name(&ClientRole::Worker {
            name: Some("w".to_owned()),
        }),
        "bzpopmin",
    )
    .await;
    blocked_in(&events.client_name(&ClientRole::QueueEvents), "xread").await;

    // Adding a job writes an event (which the read gets) and the marker (which the wait gets).
    ctx.add(1, JobOptions::new()).await;
    let read = tokio::time::timeout(Duration::from_secs(2), reading)
        .await
        .expect("the read is not held up by the wait")
        .unwrap()
        .unwrap();
    assert_eq!(read[0].fields[0], ("event".to_owned(), "added".to_owned()));
    support::woken_by_an_add(waiting, "the wait is not held up by the read").await;
}

#[tokio::test]
async fn close_ends_a_read_in_flight_and_refuses_the_next() {
    let ctx = Ctx::new().await;
    let b = ctx.backend.clone();
    let (name, reader) = blocked_read(&b, Duration::from_secs(10)).await;
    b.close(false).await.unwrap();
    let read = tokio::time::timeout(Duration::from_secs(1), reader)
        .await
        .expect("close interrupts the read")
        .unwrap()
        .unwrap();
    assert!(read.is_empty());
    support::gone(&name, "the events connection").await;
    let refused = b
        .read_events(&EventId::latest(), Duration::from_secs(1))
        .await;
    assert!(matches!(refused, Err(Error::Closed(_))), "{refused:?}");
}
