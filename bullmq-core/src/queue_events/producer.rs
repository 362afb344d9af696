//! [`QueueEventsProducer`]: custom events on a queue's stream (Node.js' `QueueEventsProducer`).

use crate::Result;
use crate::backend::{EventId, Events};
use crate::options::ValidationError;

/// How many entries Node.js' `publishEvent` keeps in the stream by default (`maxEvents`).
pub const DEFAULT_MAX_EVENTS: u64 = 1000;

/// Publishes custom events to a queue's event stream, as Node.js' `QueueEventsProducer`:
/// `publishEvent({ eventName, ...fields }, maxEvents)`. Every `QueueEvents` on the queue, in
/// any runtime, receives them: Node.js emits them under their name, Rust's reader as
/// [`QueueEvent::Custom`](super::QueueEvent::Custom).
///
/// ```no_run
/// # async fn demo<B: bullmq_core::backend::Events>(backend: B) -> bullmq_core::Result<()> {
/// use bullmq_core::queue_events::QueueEventsProducer;
///
/// let producer = QueueEventsProducer::new(backend);
/// producer.publish_event("report-ready", &[("url", "s3://reports/7.pdf")]).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct QueueEventsProducer<B> {
    backend: B,
}

impl<B: Events> QueueEventsProducer<B> {
    /// A producer on `backend`'s queue.
    pub fn new(backend: B) -> Self {
        Self { backend }
    }

    /// Publishes `name` with `fields`, keeping about [`DEFAULT_MAX_EVENTS`] entries.
    pub async fn publish_event(&self, name: &str, fields: &[(&str, &str)]) -> Result<EventId> {
        self.publish_event_max(name, fields, DEFAULT_MAX_EVENTS)
            .await
    }

    /// Publishes `name` with `fields` (stored as `event <name> <field> <value> …`, in this
    /// order), trimming the stream to about `max_events` entries; returns the entry's id.
    ///
    /// The name must not be empty, no field may be called `event` (it would hide the name),
    /// and `max_events` must be at least 1.
    pub async fn publish_event_max(
        &self,
        name: &str,
        fields: &[(&str, &str)],
        max_events: u64,
    ) -> Result<EventId> {
        let invalid = |path: &str, message: &str| {
            Err(ValidationError::single("custom event", path, message).into())
        };
        if name.is_empty() {
            return invalid("eventName", "must not be empty");
        }
        if fields.iter().any(|(k, _)| *k == "event") {
            return invalid(
                "event",
                "is the field that holds the event name; use another name",
            );
        }
        if max_events == 0 {
            return invalid("maxEvents", "must be at least 1");
        }
        let mut all = Vec::with_capacity(fields.len() + 1);
        all.push(("event", name.to_owned()));
        all.extend(fields.iter().map(|(k, v)| (*k, (*v).to_owned())));
        self.backend.publish_event(&all, max_events).await
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }
}
