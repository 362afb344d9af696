//! The queue's event stream.

use std::future::Future;
use std::time::Duration;

use super::types::EventId;
use crate::Result;

/// One entry of the event stream: its id and its fields in stored order (`event` first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEvent {
    /// The entry's id.
    pub id: EventId,
    /// The entry's fields.
    pub fields: Vec<(String, String)>,
}

/// The event stream (upstream: `trimEvents`, `publishEvent`, `readEvents`, and the `$`
/// resolution of upstream's PostgreSQL `read_events_max`).
pub trait Events: Send + Sync {
    /// Trims the stream to about `max_length` entries; returns how many were removed.
    fn trim_events(&self, max_length: u64) -> impl Future<Output = Result<u64>> + Send;

    /// Appends a custom event, keeping about `max_events` entries; returns its id.
    fn publish_event(
        &self,
        fields: &[(&str, String)],
        max_events: u64,
    ) -> impl Future<Output = Result<EventId>> + Send;

    /// Entries after `after`, waiting up to `block` for the first; empty on timeout.
    fn read_events(
        &self,
        after: &EventId,
        block: Duration,
    ) -> impl Future<Output = Result<Vec<StreamEvent>>> + Send;

    /// The id of the newest entry (the lowest possible id when the stream is empty): reading
    /// after it sees every event added from now on, as `$` does, but stays valid across
    /// reads, so a reader that reconnects before its first event loses none.
    fn last_event_id(&self) -> impl Future<Output = Result<EventId>> + Send;
}
