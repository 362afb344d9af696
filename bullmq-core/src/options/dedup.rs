//! Deduplication: at most one live job per deduplication id.

use std::time::Duration;

/// `deduplication` (stored under the short key `de`).
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::options::Deduplication;
///
/// // Debounce: keep the last job added within 5 s, replacing the delayed one.
/// let d = Deduplication::new("user-42").ttl(Duration::from_secs(5)).extend(true).replace(true);
/// assert_eq!(d.id, "user-42");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, garde::Validate)]
pub struct Deduplication {
    /// The deduplication id (`id`); must not be empty.
    #[garde(length(min = 1))]
    pub id: String,
    /// How long the id blocks duplicates (`ttl`); without it, until the job finishes.
    #[garde(skip)]
    pub ttl: Option<Duration>,
    /// Each duplicate extends the ttl (`extend`).
    #[garde(skip)]
    pub extend: Option<bool>,
    /// A duplicate replaces the data of the job while it is delayed (`replace`).
    #[garde(skip)]
    pub replace: Option<bool>,
    /// A duplicate reschedules the delayed job with its own delay (`reschedule`, 6.7).
    #[garde(skip)]
    pub reschedule: Option<bool>,
    /// A duplicate added while the job is active becomes the next job (`keepLastIfActive`).
    #[garde(skip)]
    pub keep_last_if_active: Option<bool>,
}

impl Deduplication {
    /// Deduplicate on `id` until the job finishes.
    #[must_use]
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ttl: None,
            extend: None,
            replace: None,
            reschedule: None,
            keep_last_if_active: None,
        }
    }

    /// Sets `ttl`.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Sets `extend`.
    #[must_use]
    pub fn extend(mut self, extend: bool) -> Self {
        self.extend = Some(extend);
        self
    }

    /// Sets `replace`.
    #[must_use]
    pub fn replace(mut self, replace: bool) -> Self {
        self.replace = Some(replace);
        self
    }

    /// Sets `reschedule`.
    #[must_use]
    pub fn reschedule(mut self, reschedule: bool) -> Self {
        self.reschedule = Some(reschedule);
        self
    }

    /// Sets `keepLastIfActive`.
    #[must_use]
    pub fn keep_last_if_active(mut self, keep: bool) -> Self {
        self.keep_last_if_active = Some(keep);
        self
    }
}
