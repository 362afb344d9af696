//! Reading a queue's event stream in tests.

use std::sync::Arc;
use std::time::Duration;

use bullmq_core::queue_events::{EventItem, EventSubscription, ReceivedEvent};

/// The events `sub` yields until (and with) the first one named `stop`, within `limit`, and
/// the reading errors met on the way (the reader carries on after one, losing nothing). Panics
/// when `stop` does not come in time or the subscriber lags.
pub async fn collect_until(
    sub: &mut EventSubscription,
    stop: &str,
    limit: Duration,
) -> (Vec<Arc<ReceivedEvent>>, Vec<String>) {
    let mut events = Vec::new();
    let mut errors = Vec::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let item = tokio::time::timeout_at(deadline, sub.recv())
            .await
            .unwrap_or_else(|_| panic!("no `{stop}` event within {limit:?}; got {events:#?}"))
            .expect("the reader is running");
        match item {
            EventItem::Event(event) => {
                let done = event.event.name() == stop;
                events.push(event);
                if done {
                    return (events, errors);
                }
            }
            EventItem::Error(error) => errors.push(error.to_string()),
            EventItem::Lagged(n) => panic!("the subscriber lagged by {n}"),
            other => panic!("unexpected item {other:?}"),
        }
    }
}
