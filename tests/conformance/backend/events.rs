//! `Events`: publishing to the queue's event stream and reading it back.

use std::time::Duration;

use bullmq_core::Error;
use bullmq_core::backend::{EventId, Events, Lifecycle};

use super::Sec;
use crate::store::Store;

/// A liveness bound for reads that must return (not a timing assertion).
const BOUND: Duration = Duration::from_secs(10);

fn fields(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub async fn published_events_read_back_in_order_with_their_fields<S: Store>() {
    let s = Sec::<S>::new().await;
    let start = s.b.last_event_id().await.unwrap();
    let mut ids = Vec::new();
    for n in ["1", "2", "3"] {
        let fields = [
            ("event", "custom".to_owned()),
            ("n", n.to_owned()),
            ("text", format!("é {n}")),
        ];
        ids.push(s.b.publish_event(&fields, 100).await.unwrap());
    }

    let read = s.b.read_events(&start, BOUND).await.unwrap();
    let got: Vec<&EventId> = read.iter().map(|e| &e.id).collect();
    assert_eq!(got, ids.iter().collect::<Vec<_>>());
    assert_eq!(
        read[1].fields,
        fields(&[("event", "custom"), ("n", "2"), ("text", "é 2")])
    );
    // After an id: only what followed it.
    let after = s.b.read_events(&ids[0], BOUND).await.unwrap();
    let got: Vec<&EventId> = after.iter().map(|e| &e.id).collect();
    assert_eq!(got, [&ids[1], &ids[2]]);
    assert_eq!(s.b.last_event_id().await.unwrap(), ids[2]);
}

pub async fn a_read_after_the_newest_id_waits_for_the_next_event<S: Store>() {
    let s = Sec::<S>::new().await;
    s.b.publish_event(&[("event", "old".to_owned())], 100)
        .await
        .unwrap();
    let newest = s.b.last_event_id().await.unwrap();
    let reader = tokio::spawn({
        let b = s.b.clone();
        async move { b.read_events(&newest, BOUND).await }
    });
    let id =
        s.b.publish_event(&[("event", "new".to_owned())], 100)
            .await
            .unwrap();
    let events = reader.await.unwrap().unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].id, id);
    assert_eq!(events[0].fields, fields(&[("event", "new")]));
}

pub async fn close_ends_a_read_in_flight_and_the_next<S: Store>() {
    let s = Sec::<S>::new().await;
    let b = s.sibling("q").await.backend().clone();
    let reader = tokio::spawn({
        let b = b.clone();
        async move { b.read_events(&EventId::latest(), BOUND).await }
    });
    b.close(false).await.unwrap();
    assert!(b.is_closing());
    // Interrupted (or, closed before it began, refused): either way it is over and
    // answers no event; so does the next read (refused on Redis, empty on PostgreSQL).
    let over = |read: Result<Vec<_>, Error>| match read {
        Ok(read) => assert!(read.is_empty(), "{read:?}"),
        Err(e) => assert!(matches!(e, Error::Closed(_)), "{e:?}"),
    };
    over(reader.await.unwrap());
    over(b.read_events(&EventId::latest(), BOUND).await);
}
