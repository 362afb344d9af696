//! The custom events a producer must refuse.

use bullmq_core::QueueEventsProducer;
use bullmq_core::backend::Events;

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
