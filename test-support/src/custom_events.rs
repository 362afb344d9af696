//! Custom events: those a producer must refuse, and numbered ones read back in order.

use bullmq_core::QueueEventsProducer;
use bullmq_core::backend::Events;
use bullmq_core::queue_events::ReceivedEvent;

/// Asserts that `producer` refuses a custom event that hides its name in its fields, one with
/// no name, and one for a stream capped at 0.
pub async fn assert_bad_custom_events_refused<B: Events>(producer: &QueueEventsProducer<B>) {
    let hidden = producer.publish_event("x", &[("event", "y")]).await;
    assert!(hidden.is_err(), "an `event` field: {hidden:?}");
    let unnamed = producer.publish_event("", &[]).await;
    assert!(unnamed.is_err(), "no name: {unnamed:?}");
    let capped = producer.publish_event_max("x", &[], 0).await;
    assert!(capped.is_err(), "a stream capped at 0: {capped:?}");
}

/// The numbers `events` carry in their field `name`, in order (an event without one is
/// skipped): to check that numbered events arrived each once, in order.
pub fn numbered(events: &[std::sync::Arc<ReceivedEvent>], name: &str) -> Vec<usize> {
    events
        .iter()
        .filter_map(|e| e.field(name).and_then(|n| n.parse().ok()))
        .collect()
}
