//! Repeat settings carried by the jobs a job scheduler produces.

use std::collections::BTreeMap;
use std::time::Duration;

use bullmq_cron::CronOptions;

use super::{InvalidInstant, KeyOrder, UnixMillis};

/// A job scheduler's schedule (Node.js's `RepeatOptions`), and `repeat` in the options of the
/// jobs it produces.
///
/// Users do not set this on `add` (Node.js 6 removed that); the scheduler fills it so the worker
/// that finishes an iteration can schedule the next one. Unknown keys written by other runtimes
/// are kept in `extra` and written back untouched.
///
/// Built with [`cron`](Self::cron) or [`every`](Self::every) and consuming setters; start and
/// end dates take Unix milliseconds, a [`SystemTime`](std::time::SystemTime) or a
/// [`chrono::DateTime`] (see [`UnixMillis`]).
///
/// The dates are set and read typed ([`start_date`](Self::start_date) /
/// [`start_at`](Self::start_at), …): the public `u64` fields are deprecated.
///
/// The setters remember the order they were called in ([`key_order`](Self::key_order)), as a
/// JavaScript object remembers the order its keys were written in: Node.js keeps a caller's
/// order in the `repeat` options of the jobs a scheduler produces, so a schedule set up in the
/// order a Node.js caller writes it (`pattern`, `tz`, `limit`, `endDate`, …) is stored with
/// the bytes Node.js stores.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use bullmq_core::scheduling::RepeatOptions;
///
/// let nightly = RepeatOptions::cron("0 3 * * *")
///     .tz("Europe/London")
///     .limit(30)
///     .end_date(SystemTime::now() + Duration::from_secs(30 * 86_400));
/// let ticks = RepeatOptions::every(Duration::from_secs(5)).start_date(1_900_000_000_000_u64);
/// assert_eq!(ticks.start_at().map(|at| at.get()), Some(1_900_000_000_000));
/// let from_text = RepeatOptions::cron("0 3 * * *").start_date_iso("2030-01-31T09:00:00Z")?;
/// # let _ = (nightly, from_text);
/// # Ok::<(), bullmq_core::options::InvalidInstant>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepeatOptions {
    /// Cron pattern (`pattern`).
    pub pattern: Option<String>,
    /// Fixed interval (`every`).
    pub every: Option<Duration>,
    /// Maximum number of iterations (`limit`).
    pub limit: Option<u64>,
    /// Run the first iteration right away (`immediately`).
    pub immediately: Option<bool>,
    /// Iterations so far (`count`), kept by the scheduler in its jobs' options; an upsert
    /// ignores it and starts from 1 (as Node.js 6.7.6, where it is internal).
    pub count: Option<u64>,
    /// Offset of `every` iterations (`offset`).
    pub offset: Option<Duration>,
    /// First allowed run, Unix ms (`startDate`).
    #[deprecated(
        since = "0.2.0",
        note = "set it with the typed `start_date(..)` / `start_date_iso(..)` (which keep the key order) and read it with `start_at()`; the field becomes private in the next breaking release"
    )]
    pub start_date: Option<u64>,
    /// Last allowed run, Unix ms (`endDate`).
    #[deprecated(
        since = "0.2.0",
        note = "set it with the typed `end_date(..)` / `end_date_iso(..)` (which keep the key order) and read it with `end_at()`; the field becomes private in the next breaking release"
    )]
    pub end_date: Option<u64>,
    /// IANA time zone of the pattern (`tz`).
    pub tz: Option<String>,
    /// Previous run, Unix ms (`prevMillis`; legacy, kept as read).
    #[deprecated(
        since = "0.2.0",
        note = "read it with the typed `prev_at()`; the field becomes private in the next breaking release"
    )]
    pub prev_millis: Option<u64>,
    /// Legacy custom key (`key`).
    pub key: Option<String>,
    /// Keys this version does not know, kept verbatim.
    pub extra: BTreeMap<String, serde_json::Value>,
    /// The order the keys are written in: the order the setters were called in, or the order
    /// a store held them in. Keys set without a setter come after the listed ones, in the
    /// order Rust writes them; empty means that order throughout. Ignored by `==`.
    pub key_order: KeyOrder,
}

// The accessors of the raw fields, deprecated for everyone else.
#[allow(deprecated)]
impl RepeatOptions {
    /// A schedule on a cron `pattern` (Node.js's `pattern`).
    #[must_use]
    pub fn cron(pattern: impl Into<String>) -> Self {
        Self::new().pattern(pattern)
    }

    /// A schedule every `interval` (Node.js's `every`).
    #[must_use]
    pub fn every(interval: Duration) -> Self {
        Self::new().interval(interval)
    }

    /// A schedule with nothing set yet: for setting its keys in the order a Node.js caller
    /// writes them, the pattern or interval not first (`{tz, pattern}`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use bullmq_core::options::RepeatOptions;
    ///
    /// let nightly = RepeatOptions::new().tz("Europe/Paris").pattern("0 3 * * *").limit(7);
    /// assert_eq!(nightly.key_order.keys().collect::<Vec<_>>(), ["tz", "pattern", "limit"]);
    /// let hourly = RepeatOptions::new().limit(24).interval(Duration::from_secs(3_600));
    /// assert_eq!(hourly.every, Some(Duration::from_secs(3_600)));
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the cron pattern (`pattern`); [`cron`](Self::cron) starts a schedule with it.
    #[must_use]
    pub fn pattern(self, pattern: impl Into<String>) -> Self {
        self.set("pattern", |r| r.pattern = Some(pattern.into()))
    }

    /// Sets the fixed interval (`every`); [`every`](Self::every) starts a schedule with it.
    #[must_use]
    pub fn interval(self, interval: Duration) -> Self {
        self.set("every", |r| r.every = Some(interval))
    }

    /// Sets the IANA time zone of the pattern (`tz`).
    #[must_use]
    pub fn tz(self, tz: impl Into<String>) -> Self {
        self.set("tz", |r| r.tz = Some(tz.into()))
    }

    /// Sets the maximum number of iterations (`limit`).
    #[must_use]
    pub fn limit(self, limit: u64) -> Self {
        self.set("limit", |r| r.limit = Some(limit))
    }

    /// Runs the first iteration right away (`immediately`).
    #[must_use]
    pub fn immediately(self, immediately: bool) -> Self {
        self.set("immediately", |r| r.immediately = Some(immediately))
    }

    /// Sets the iteration count (`count`). An upsert starts counting from 1 whatever it is
    /// given, as Node.js 6.7.6 does; the key keeps its place in the order all the same, as it
    /// does in the object a Node.js caller passes.
    #[must_use]
    pub fn count(self, count: u64) -> Self {
        self.set("count", |r| r.count = Some(count))
    }

    /// Sets the offset of `every` iterations within their interval (`offset`).
    #[must_use]
    pub fn offset(self, offset: Duration) -> Self {
        self.set("offset", |r| r.offset = Some(offset))
    }

    /// Sets the first allowed run (`startDate`).
    #[must_use]
    pub fn start_date(self, at: impl Into<UnixMillis>) -> Self {
        self.set("startDate", |r| r.start_date = Some(at.into().get()))
    }

    /// Sets the last allowed run (`endDate`).
    #[must_use]
    pub fn end_date(self, at: impl Into<UnixMillis>) -> Self {
        self.set("endDate", |r| r.end_date = Some(at.into().get()))
    }

    /// Sets the first allowed run from ISO 8601 text (`2030-01-31T09:00:00Z`), as Node.js
    /// takes a `startDate` string; see [`UnixMillis`]'s `FromStr` for the forms read.
    ///
    /// # Errors
    ///
    /// [`InvalidInstant`] when `text` is not such an instant.
    pub fn start_date_iso(self, text: &str) -> Result<Self, InvalidInstant> {
        Ok(self.start_date(text.parse::<UnixMillis>()?))
    }

    /// Sets the last allowed run from ISO 8601 text, as Node.js takes an `endDate` string.
    ///
    /// # Errors
    ///
    /// [`InvalidInstant`] when `text` is not such an instant.
    pub fn end_date_iso(self, text: &str) -> Result<Self, InvalidInstant> {
        Ok(self.end_date(text.parse::<UnixMillis>()?))
    }

    /// Sets a key with `write` and notes it in [`key_order`](Self::key_order) (a key set
    /// again keeps its place, as in a JavaScript object).
    fn set(mut self, key: &str, write: impl FnOnce(&mut Self)) -> Self {
        write(&mut self);
        self.key_order.push(key, KeyOrder::default());
        self
    }

    /// The previous run (`prevMillis`), typed.
    #[must_use]
    pub fn prev_at(&self) -> Option<UnixMillis> {
        self.prev_millis.map(UnixMillis::from)
    }

    /// The first allowed run, typed; the `start_date` field holds it in Unix ms.
    #[must_use]
    pub fn start_at(&self) -> Option<UnixMillis> {
        self.start_date.map(UnixMillis::from)
    }

    /// The last allowed run, typed; the `end_date` field holds it in Unix ms.
    #[must_use]
    pub fn end_at(&self) -> Option<UnixMillis> {
        self.end_date.map(UnixMillis::from)
    }

    /// The cron-parser options of this schedule (zone, start and end dates), searching from
    /// `current` (Unix ms). The dates go as given, as Node.js passes its repeat options on:
    /// since cron-parser 5.10.4 (bullmq 6.7.6) a date of 0 is the epoch, so an end date of 0
    /// leaves no run.
    #[must_use]
    pub fn cron_options(&self, current: u64) -> CronOptions {
        CronOptions {
            tz: self.tz.clone().filter(|t| !t.is_empty()),
            current_date: Some(current),
            start_date: self.start_date,
            end_date: self.end_date,
            hash_seed: None,
        }
    }
}
