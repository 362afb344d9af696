//! [`QueueEventsOptions`]: Node.js' `QueueEventsOptions`, typed and validated.

use std::time::Duration;

use crate::backend::EventId;
use crate::options::ValidationError;

/// The longest `blocking_timeout` accepted: a read blocked longer would hide a lost
/// connection for that long.
const MAX_BLOCKING_TIMEOUT: Duration = Duration::from_secs(3600);

/// How a [`QueueEvents`](super::QueueEvents) reads the stream.
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::queue_events::QueueEventsOptions;
///
/// let opts = QueueEventsOptions::new().blocking_timeout(Duration::from_secs(2));
/// assert!(opts.validate().is_ok());
/// let err = QueueEventsOptions::new().capacity(0).validate().unwrap_err();
/// assert_eq!(err.problems()[0].path, "capacity");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, garde::Validate)]
pub struct QueueEventsOptions {
    /// Start the read loop as soon as it is built (`autorun`, default true); otherwise call
    /// [`run`](super::QueueEvents::run).
    #[garde(skip)]
    pub autorun: bool,
    /// Read the events after this id (`lastEventId`); `None` or `$`: only events added from the
    /// moment the reader starts.
    #[garde(skip)]
    pub last_event_id: Option<EventId>,
    /// How long one read waits for new events (`blockingTimeout`, default 10 s).
    #[garde(custom(blocking_timeout_in_range))]
    pub blocking_timeout: Duration,
    /// How long to wait before reading again after a second failure in a row (Node.js waits
    /// 5 s after every failure; the first retry here is immediate, so a dropped connection
    /// costs no wait).
    #[garde(skip)]
    pub retry_delay: Duration,
    /// How many events a slow subscriber may fall behind before it misses some (it is told how
    /// many with [`EventItem::Lagged`](super::EventItem::Lagged)); default 1024.
    #[garde(range(min = 1, max = 1 << 20))]
    pub capacity: usize,
}

impl Default for QueueEventsOptions {
    fn default() -> Self {
        Self {
            autorun: true,
            last_event_id: None,
            blocking_timeout: Duration::from_secs(10),
            retry_delay: Duration::from_secs(5),
            capacity: 1024,
        }
    }
}

fn blocking_timeout_in_range(timeout: &Duration, _ctx: &()) -> garde::Result {
    if timeout.is_zero() || *timeout > MAX_BLOCKING_TIMEOUT {
        return Err(garde::Error::new(format!(
            "must be more than 0 and at most {} s (got {timeout:?})",
            MAX_BLOCKING_TIMEOUT.as_secs()
        )));
    }
    Ok(())
}

impl QueueEventsOptions {
    /// Node.js' defaults.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`autorun`](Self::autorun).
    #[must_use]
    pub fn autorun(mut self, autorun: bool) -> Self {
        self.autorun = autorun;
        self
    }

    /// Sets [`last_event_id`](Self::last_event_id).
    #[must_use]
    pub fn last_event_id(mut self, id: EventId) -> Self {
        self.last_event_id = Some(id);
        self
    }

    /// Sets [`blocking_timeout`](Self::blocking_timeout).
    #[must_use]
    pub fn blocking_timeout(mut self, timeout: Duration) -> Self {
        self.blocking_timeout = timeout;
        self
    }

    /// Sets [`retry_delay`](Self::retry_delay).
    #[must_use]
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.retry_delay = delay;
        self
    }

    /// Sets [`capacity`](Self::capacity).
    #[must_use]
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Checks every rule.
    pub fn validate(&self) -> Result<(), ValidationError> {
        ValidationError::check(
            "queue events options",
            garde::Validate::validate(self),
            Vec::new(),
        )
    }

    /// The id to read after, when one was given (`$` is none).
    pub(crate) fn start_id(&self) -> Option<&EventId> {
        self.last_event_id
            .as_ref()
            .filter(|id| *id != &EventId::latest())
    }
}
