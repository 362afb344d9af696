//! Writing a queue's `meta` hash once, before the first write that needs it, as a Node.js
//! `Queue` writes it when it starts. Shared by [`Queue`](super::Queue) and anything else that
//! stands for one (the job scheduler's upsert goes through a `Queue` in Node.js).

use std::sync::atomic::{AtomicBool, Ordering};

use super::{DEFAULT_MAX_LEN_EVENTS, LIB_VERSION};
use crate::Result;
use crate::backend::QueueMeta;

/// Writes `opts.maxLenEvents` and `version` into a queue's `meta`, once.
#[derive(Debug)]
pub struct QueueMetaWriter {
    max_len_events: u64,
    written: AtomicBool,
}

impl Default for QueueMetaWriter {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LEN_EVENTS)
    }
}

impl QueueMetaWriter {
    /// A writer for a queue whose event stream is trimmed to about `max_len_events` entries
    /// (upstream: `streams.events.maxLen`).
    #[must_use]
    pub fn new(max_len_events: u64) -> Self {
        Self {
            max_len_events,
            written: AtomicBool::new(false),
        }
    }

    /// The `opts.maxLenEvents` it writes.
    #[must_use]
    pub fn max_len_events(&self) -> u64 {
        self.max_len_events
    }

    /// Writes the meta on `backend` unless this writer already did.
    ///
    /// # Errors
    ///
    /// A backend failure; the next call tries again.
    pub async fn write<B: QueueMeta>(&self, backend: &B) -> Result<()> {
        if self.written.load(Ordering::Relaxed) {
            return Ok(());
        }
        let values = [
            ("opts.maxLenEvents", self.max_len_events.to_string()),
            ("version", LIB_VERSION.to_owned()),
        ];
        backend.set_queue_meta(&values).await?;
        self.written.store(true, Ordering::Relaxed);
        Ok(())
    }
}
