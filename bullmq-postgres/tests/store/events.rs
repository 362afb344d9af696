//! Only what is PostgreSQL-specific; the shared cases are the conformance suite's `events.rs`.
//!
//! `Events` on PostgreSQL, end to end: publishing with upstream's `publish_event`, reading
//! with its `read_events`, woken by `bullmq_events`; and the reader's promise, which
//! upstream's breaks: every committed event once, in id order, however transactions
//! interleave their commits.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::support::TestSchema;
use bullmq_core::Error;
use bullmq_core::QueueName;
use bullmq_core::backend::{EventId, Events, Lifecycle, StreamEvent};
use bullmq_postgres::__private::sql::commands;
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx::{self, Postgres, Transaction, types::Json};

/// The id as a number.
fn num(id: &EventId) -> i64 {
    id.as_str().parse().unwrap()
}

/// Publishes `event` with upstream's command inside `tx` (not committed); returns its id.
async fn publish_in(tx: &mut Transaction<'static, Postgres>, queue: &str, event: &str) -> i64 {
    sqlx::query_scalar(commands::PUBLISH_EVENT.text)
        .bind(queue)
        .bind(event)
        // As the backend binds it: sqlx prepares a command once per connection, with the
        // parameter types of its first use.
        .bind(Json(serde_json::json!({ "k": "v" })))
        .fetch_one(&mut **tx)
        .await
        .unwrap()
}

/// One read after `cursor` (blocking up to `block`), moving `cursor` past what it got.
async fn read_on(b: &PostgresBackend, cursor: &mut EventId, block: Duration) -> Vec<StreamEvent> {
    let read = b.read_events(cursor, block).await.unwrap();
    if let Some(last) = read.last() {
        cursor.clone_from(&last.id);
    }
    read
}

/// Runs `call` in a task while `tx` stays open, then commits `tx`: whether `call` had
/// returned before the commit, and its answer (within 5 s of it). The wait before the
/// commit is fixed (300 ms): what it checks is an absence, which nothing announces.
async fn across_commit<T: Send + 'static>(
    tx: Transaction<'static, Postgres>,
    call: impl Future<Output = T> + Send + 'static,
) -> (bool, T) {
    let task = tokio::spawn(call);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let early = task.is_finished();
    tx.commit().await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("released by the commit")
        .unwrap();
    (early, answer)
}

/// Reads until `count` events have come after `after` (or 10 s pass); returns them.
async fn read_n(b: &PostgresBackend, after: &EventId, count: usize) -> Vec<StreamEvent> {
    let mut got = Vec::new();
    let mut cursor = after.clone();
    let until = Instant::now() + Duration::from_secs(10);
    while got.len() < count && Instant::now() < until {
        got.extend(read_on(b, &mut cursor, Duration::from_millis(500)).await);
    }
    got
}

fn ids(events: &[StreamEvent]) -> Vec<i64> {
    events.iter().map(|e| num(&e.id)).collect()
}

#[tokio::test]
async fn published_events_are_read_back_with_their_fields() {
    let (_schema, b) = TestSchema::with_backend("ev_basic", "mail").await;
    assert_eq!(b.last_event_id().await.unwrap(), EventId::new("0"));

    let fields = [
        ("event", "custom".to_owned()),
        ("b", "2".to_owned()),
        ("a", "x".to_owned()),
    ];
    let id = b.publish_event(&fields, 10).await.unwrap();
    assert_eq!(b.last_event_id().await.unwrap(), id);
    let read = b
        .read_events(&EventId::new("0"), Duration::ZERO)
        .await
        .unwrap();
    // `event` first, then the data in `jsonb`'s key order, as Node.js reads them.
    assert_eq!(
        read,
        vec![StreamEvent {
            id: id.clone(),
            fields: vec![
                ("event".to_owned(), "custom".to_owned()),
                ("a".to_owned(), "x".to_owned()),
                ("b".to_owned(), "2".to_owned()),
            ],
        }]
    );
    // Redis' "from the start" reads the same.
    let from_start = b
        .read_events(&EventId::new("0-0"), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(ids(&from_start), vec![num(&id)]);

    // Nothing after it: the read waits out its block.
    let start = Instant::now();
    assert!(
        b.read_events(&id, Duration::from_millis(400))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(start.elapsed() >= Duration::from_millis(400));

    // Events of another queue are not ours.
    let other = b.for_queue(&QueueName::new("other").unwrap(), None);
    other
        .publish_event(&[("event", "x".to_owned())], 10)
        .await
        .unwrap();
    assert!(b.read_events(&id, Duration::ZERO).await.unwrap().is_empty());

    let bad = b.read_events(&EventId::new("1-0x"), Duration::ZERO).await;
    assert!(matches!(bad, Err(Error::Invalid(_))), "{bad:?}");
}

#[tokio::test]
async fn trim_is_not_supported() {
    let (_schema, b) = TestSchema::with_backend("ev_trim", "mail").await;
    let err = b.trim_events(10).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unsupported {
                operation: "trimEvents",
                backend: "postgres"
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_event_committed_after_a_later_one_is_not_skipped() {
    let (_schema, b) = TestSchema::with_backend("ev_order", "mail").await;
    let pool = b.connection().pool().clone();
    let start = b.last_event_id().await.unwrap();

    let mut first = pool.begin().await.unwrap();
    let early = publish_in(&mut first, "mail", "early").await;
    let mut second = pool.begin().await.unwrap();
    let late = publish_in(&mut second, "mail", "late").await;
    assert!(early < late);
    second.commit().await.unwrap();

    // Upstream's `id > cursor` read would hand out `late` now and move past `early`. (Checked
    // once `first` is over: an open transaction would hold up dropping the schema.)
    let premature = b
        .read_events(&start, Duration::from_millis(500))
        .await
        .unwrap();

    // A blocked read gets both, in order, once the earlier one commits (not `late` alone
    // while `first` is open).
    let (returned_early, read) = {
        let (b, start) = (b.clone(), start.clone());
        across_commit(first, async move {
            b.read_events(&start, Duration::from_secs(20)).await
        })
        .await
    };
    let read = read.unwrap();
    assert!(
        premature.is_empty(),
        "held back behind the open transaction: {premature:?}"
    );
    assert!(
        !returned_early,
        "the blocked read waited for the open transaction"
    );
    assert_eq!(ids(&read), vec![early, late]);
    assert_eq!(read[0].fields[0], ("event".to_owned(), "early".to_owned()));

    // A rolled-back transaction leaves a hole for good, which stops nothing.
    let cursor = read[1].id.clone();
    let mut doomed = pool.begin().await.unwrap();
    publish_in(&mut doomed, "mail", "never").await;
    let mut kept = pool.begin().await.unwrap();
    let after_hole = publish_in(&mut kept, "mail", "kept").await;
    kept.commit().await.unwrap();
    doomed.rollback().await.unwrap();
    let read = b
        .read_events(&cursor, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(ids(&read), vec![after_hole]);
}

#[tokio::test]
async fn the_newest_id_never_passes_an_event_in_flight() {
    let (_schema, b) = TestSchema::with_backend("ev_newest", "mail").await;
    let pool = b.connection().pool().clone();
    let mut open = pool.begin().await.unwrap();
    let in_flight = publish_in(&mut open, "mail", "in-flight").await;
    let committed = b
        .publish_event(&[("event", "committed".to_owned())], 10)
        .await
        .unwrap();
    assert!(num(&committed) > in_flight);

    // `$` resolves once the writer in flight is done (here: commits after it was asked).
    // `$` would (wrongly) resolve past the writer in flight.
    let (resolved_early, newest) = {
        let b = b.clone();
        across_commit(open, async move { b.last_event_id().await }).await
    };
    assert!(!resolved_early, "waits for the writer in flight");
    let newest = newest.unwrap();
    assert_eq!(newest, committed);
}

#[tokio::test]
async fn concurrent_writers_every_committed_event_once_in_order() {
    const WRITERS: usize = 8;
    const EACH: usize = 30;
    let (_schema, b) = TestSchema::with_backend("ev_stress", "mail").await;
    let other = b.for_queue(&QueueName::new("other").unwrap(), None);
    let start = b.last_event_id().await.unwrap();
    let pool = b.connection().pool().clone();

    // Writers: each event in a transaction of its own that sleeps a varying while before it
    // commits (one in seven rolls back), so commits interleave out of id order; another
    // queue's events fill the sequence in between.
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let pool = pool.clone();
        let other = other.clone();
        writers.push(tokio::spawn(async move {
            let mut committed = Vec::new();
            for i in 0..EACH {
                let mut tx = pool.begin().await.unwrap();
                let id = publish_in(&mut tx, "mail", &format!("w{w}-{i}")).await;
                let pause = u64::try_from((w * 7 + i * 13) % 37).unwrap();
                // Simulates work inside the transaction, so commits interleave.
                tokio::time::sleep(Duration::from_millis(pause)).await;
                if (w + i) % 7 == 3 {
                    tx.rollback().await.unwrap();
                } else {
                    tx.commit().await.unwrap();
                    committed.push(id);
                }
                if i % 5 == 0 {
                    other
                        .publish_event(&[("event", "noise".to_owned())], 1000)
                        .await
                        .unwrap();
                }
            }
            committed
        }));
    }

    // The reader runs meanwhile, as `QueueEvents` does.
    let reader = {
        let b = b.clone();
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut cursor = start;
            let until = Instant::now() + Duration::from_secs(60);
            while seen.len() < WRITERS * EACH && Instant::now() < until {
                let read = read_on(&b, &mut cursor, Duration::from_millis(300)).await;
                seen.extend(ids(&read));
                if read.is_empty() && !seen.is_empty() {
                    // Quiet for a whole block: the writers may be done.
                    break;
                }
            }
            (seen, cursor)
        })
    };

    let mut committed = BTreeSet::new();
    for writer in writers {
        committed.extend(writer.await.unwrap());
    }
    let (mut seen, cursor) = reader.await.unwrap();
    // Whatever the reader had not got to when it stopped.
    seen.extend(ids(&read_n(
        &b,
        &cursor,
        committed.len().saturating_sub(seen.len()),
    )
    .await));

    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "in id order, no repeats: {seen:?}"
    );
    let seen_set: BTreeSet<i64> = seen.iter().copied().collect();
    let missed: Vec<_> = committed.difference(&seen_set).collect();
    let extra: Vec<_> = seen_set.difference(&committed).collect();
    assert!(missed.is_empty(), "missed {missed:?}");
    assert!(extra.is_empty(), "rolled back yet read: {extra:?}");
}
