//! [`EventSubscription`]: one subscriber's view of a [`QueueEvents`](super::QueueEvents)
//! reader, with cheap filters by event name and job.

use std::sync::Arc;

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::event::ReceivedEvent;
use crate::{Error, JobId};

/// What a subscriber receives.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum EventItem {
    /// An event of the stream, in stream order.
    Event(Arc<ReceivedEvent>),
    /// Reading failed (a lost connection, a server error); the reader carries on from the last
    /// event it saw, so no event is lost, only delayed.
    Error(Arc<Error>),
    /// This subscriber fell behind by more than the reader's
    /// [`capacity`](super::QueueEventsOptions::capacity) and missed this many items; to get
    /// them back, read again from the last id it saw with a new reader
    /// ([`last_event_id`](super::QueueEventsOptions::last_event_id)).
    Lagged(u64),
}

/// A subscription to a [`QueueEvents`](super::QueueEvents) reader.
///
/// Filters apply to events only: errors and lag notices always come through [`recv`](Self::recv).
#[derive(Debug)]
pub struct EventSubscription {
    rx: Option<broadcast::Receiver<EventItem>>,
    names: Option<Vec<String>>,
    job: Option<JobId>,
}

impl EventSubscription {
    pub(crate) fn new(rx: Option<broadcast::Receiver<EventItem>>) -> Self {
        Self {
            rx,
            names: None,
            job: None,
        }
    }

    /// Keeps only events with one of these names (`completed`, `failed`, a custom name, …).
    #[must_use]
    pub fn only(mut self, names: &[&str]) -> Self {
        self.names = Some(names.iter().map(|n| (*n).to_owned()).collect());
        self
    }

    /// Keeps only events about this job (Node.js' `<event>:<jobId>` listeners).
    #[must_use]
    pub fn for_job(mut self, job_id: &JobId) -> Self {
        self.job = Some(job_id.clone());
        self
    }

    fn wanted(&self, event: &ReceivedEvent) -> bool {
        let name_ok = self
            .names
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == event.event.name()));
        let job_ok = self
            .job
            .as_ref()
            .is_none_or(|job| event.event.job_id() == Some(job.as_str()));
        name_ok && job_ok
    }

    /// The next item that passes the filters; `None` once the reader is closed and every item
    /// sent before has been received.
    pub async fn recv(&mut self) -> Option<EventItem> {
        loop {
            let item = match self.rx.as_mut()?.recv().await {
                Ok(item) => item,
                Err(RecvError::Lagged(missed)) => return Some(EventItem::Lagged(missed)),
                Err(RecvError::Closed) => {
                    self.rx = None;
                    return None;
                }
            };
            match &item {
                EventItem::Event(event) if !self.wanted(event) => {}
                _ => return Some(item),
            }
        }
    }

    /// The next event that passes the filters, skipping errors and lag notices; `None` once the
    /// reader is closed.
    pub async fn next_event(&mut self) -> Option<Arc<ReceivedEvent>> {
        loop {
            if let EventItem::Event(event) = self.recv().await? {
                return Some(event);
            }
        }
    }
}
