//! Reading a queue's event stream, and writing custom events to it: Node.js BullMQ's
//! `QueueEvents`, `QueueEventsProducer` and `Job.waitUntilFinished`, over any backend.
//!
//! - [`QueueEvents`]: the read loop, with [`subscribe`](QueueEvents::subscribe) for a typed
//!   stream of [`EventItem`]s and [`wait_until_finished`](QueueEvents::wait_until_finished).
//! - [`QueueEvent`]: every event upstream's scripts write, typed; custom and malformed events
//!   are kept with their raw fields.
//! - [`QueueEventsProducer`]: custom events, seen by every runtime's `QueueEvents`.

mod event;
mod options;
mod producer;
mod reader;
mod subscription;
mod wait;

pub use event::{QueueEvent, ReceivedEvent};
pub use options::QueueEventsOptions;
pub use producer::{DEFAULT_MAX_EVENTS, QueueEventsProducer};
pub use reader::QueueEvents;
pub use subscription::{EventItem, EventSubscription};
pub use wait::WaitError;
