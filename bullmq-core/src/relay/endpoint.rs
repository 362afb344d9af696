//! A subscription's endpoint on this node: its handler, and the messages held back while its
//! retained message is being read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::de::DeserializeOwned;

use super::{RelayEvent, RelayMessage};
use crate::Error;

/// A message as it came from the store, its data still serialized.
#[derive(Debug, Clone)]
pub(crate) struct RawMessage {
    pub(crate) topic: String,
    pub(crate) mid: String,
    pub(crate) ts: u64,
    pub(crate) data: String,
    pub(crate) retained: bool,
}

impl RawMessage {
    /// The message id as a number, to compare ids (they are decimal, increasing per namespace).
    pub(crate) fn mid_number(&self) -> u128 {
        self.mid.parse().unwrap_or(0)
    }
}

/// Parses the data and calls the handler; what fails goes to the events as an error.
pub(crate) type Deliver = Arc<dyn Fn(RawMessage) + Send + Sync>;

pub(crate) struct Endpoint {
    pub(crate) pattern: String,
    pub(crate) deliver: Deliver,
    /// False once unsubscribed: nothing more is delivered to it.
    pub(crate) active: Arc<AtomicBool>,
    /// Live messages that came while subscribing, delivered after the retained one.
    pub(crate) pending: Option<Vec<RawMessage>>,
}

impl Endpoint {
    /// Delivers `message` unless the endpoint was unsubscribed.
    pub(crate) fn deliver(deliver: &Deliver, active: &AtomicBool, message: RawMessage) {
        if active.load(Ordering::SeqCst) {
            deliver(message);
        }
    }
}

/// The deliverer for a typed handler: the data parsed as `T` (an error event when it is not
/// one), then the handler called; a panicking handler is an error event too, not a dead loop.
pub(crate) fn typed<T, F>(handler: F, events: tokio::sync::broadcast::Sender<RelayEvent>) -> Deliver
where
    T: DeserializeOwned + Send + 'static,
    F: Fn(RelayMessage<T>) + Send + Sync + 'static,
{
    Arc::new(move |raw: RawMessage| {
        let data = match serde_json::from_str::<T>(&raw.data) {
            Ok(data) => data,
            Err(e) => {
                let err = Error::Invalid(crate::options::ValidationError::single(
                    "relay message",
                    "data",
                    format!(
                        "on `{}` (message {}) is not the type subscribed for: {e}",
                        raw.topic, raw.mid
                    ),
                ));
                let _ = events.send(RelayEvent::Error(Arc::new(err)));
                return;
            }
        };
        let (topic, mid) = (raw.topic.clone(), raw.mid.clone());
        let message = RelayMessage {
            topic: raw.topic,
            data,
            mid: raw.mid,
            ts: raw.ts,
            retained: raw.retained,
        };
        let call = std::panic::AssertUnwindSafe(|| handler(message));
        if std::panic::catch_unwind(call).is_err() {
            let _ = events.send(RelayEvent::HandlerPanicked { topic, mid });
        }
    })
}
