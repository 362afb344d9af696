//! Cron patterns for bullmq, with the semantics of Node.js's cron-parser 5 (the version
//! bullmq 6.7.6 uses), so that Rust and Node.js schedulers agree on every run time.
//!
//! - 5 fields (`minute hour day-of-month month day-of-week`), or 6 with seconds first; like
//!   cron-parser, fewer fields are accepted too, the missing leading ones being second `0` and
//!   `*`. `@daily`, `@hourly` and cron-parser's other shorthands.
//! - Lists, ranges, steps (`*/5`, `10-40/10`, `5/15`), `?` as `*`, month and weekday names
//!   (`jan`, `mon-fri`), Sunday as 0 and 7.
//! - `L` in the day of month (last day), `5L` in the day of week (last Friday), `5#2` (second
//!   Friday). cron-parser has no `W`, so it is refused here too. `H` (hashed) values, random
//!   unless a seed is given.
//! - Day of month and day of week: when both are restricted a day matching either runs; when
//!   one is `*` or `?`, the other alone decides (`*/1` counts as restricted, as upstream).
//! - Any IANA zone (chrono-tz), with cron-parser's handling of DST: a time skipped by a
//!   spring-forward change is moved forward by the gap (2:30 becomes 3:30), an hour repeated by
//!   a fall-back change runs once.
//!
//! ```
//! use bullmq_cron::{CronExpression, CronOptions};
//!
//! // 2024-03-09T12:00:00Z; New York moves its clocks forward on 2024-03-10 at 2:00.
//! let options = CronOptions::new().tz("America/New_York").current_date(1_709_985_600_000);
//! let mut cron = CronExpression::parse("30 2 * * *", &options)?;
//! // 2:30 does not exist on the 10th: the run is moved forward by the gap, to 3:30 EDT (07:30Z).
//! assert_eq!(cron.next_run()?, 1_710_055_800_000);
//! # Ok::<(), bullmq_cron::CronError>(())
//! ```

#![forbid(unsafe_code)]

mod civil;
mod cron_date;
mod error;
mod fields;
mod hashed;
mod parse;
mod search;
mod zone;
mod zoned;

pub use error::{CronError, CronField};
pub use zone::Zone;

use cron_date::CronDate;
use fields::Fields;
use search::TimeSpan;
use zoned::ZonedTime;

/// Where and from when a pattern is read (cron-parser's options).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CronOptions {
    /// IANA time zone (`Europe/London`), `UTC` or `UTC+2`; the system's zone when absent.
    pub tz: Option<String>,
    /// Search from this instant (Unix ms); now when absent.
    pub current_date: Option<u64>,
    /// No run before this instant (Unix ms); also where the search starts when it is later.
    pub start_date: Option<u64>,
    /// No run after this instant (Unix ms).
    pub end_date: Option<u64>,
    /// Seed that fixes the values of `H`.
    pub hash_seed: Option<String>,
}

impl CronOptions {
    /// No zone, no dates: the system zone, from now.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the time zone.
    #[must_use]
    pub fn tz(mut self, tz: impl Into<String>) -> Self {
        self.tz = Some(tz.into());
        self
    }

    /// Sets the instant the search starts from (Unix ms).
    #[must_use]
    pub fn current_date(mut self, millis: u64) -> Self {
        self.current_date = Some(millis);
        self
    }

    /// Sets the start date (Unix ms).
    #[must_use]
    pub fn start_date(mut self, millis: u64) -> Self {
        self.start_date = Some(millis);
        self
    }

    /// Sets the end date (Unix ms).
    #[must_use]
    pub fn end_date(mut self, millis: u64) -> Self {
        self.end_date = Some(millis);
        self
    }

    /// Sets the seed of `H` values.
    #[must_use]
    pub fn hash_seed(mut self, seed: impl Into<String>) -> Self {
        self.hash_seed = Some(seed.into());
        self
    }
}

/// A parsed pattern and its position: each [`next_run`](Self::next_run) returns the following run.
#[derive(Debug, Clone, PartialEq)]
pub struct CronExpression {
    fields: Fields,
    span: TimeSpan,
    current: CronDate,
}

/// The last instant a JavaScript `Date` holds (8.64e15 ms, in the year 275760): a later date
/// option is refused ([`CronError::DateOutOfRange`]), and no run is found past it.
pub const MAX_DATE_MS: u64 = 8_640_000_000_000_000;

/// A date option as the search's `i64`, refused past [`MAX_DATE_MS`].
fn checked_date(option: &'static str, millis: Option<u64>) -> Result<Option<i64>, CronError> {
    let Some(millis) = millis else {
        return Ok(None);
    };
    let out_of_range = CronError::DateOutOfRange {
        option,
        millis,
        max: MAX_DATE_MS,
    };
    if millis > MAX_DATE_MS {
        return Err(out_of_range);
    }
    i64::try_from(millis).map(Some).map_err(|_| out_of_range)
}

impl CronExpression {
    /// Parses `pattern` with `options`.
    ///
    /// # Errors
    ///
    /// A [`CronError`] naming what cron-parser would refuse: too many fields, a value out of
    /// range, an unknown name or time zone, a date past [`MAX_DATE_MS`], and so on.
    pub fn parse(pattern: &str, options: &CronOptions) -> Result<Self, CronError> {
        let fields = parse::parse(pattern, options.hash_seed.as_deref())?;
        let zone = Zone::resolve(options.tz.as_deref())?;
        // 0 is the epoch, not a missing date (cron-parser 5.10.4; 5.10.3 ignored it).
        let span = TimeSpan {
            start: checked_date("start_date", options.start_date)?,
            end: checked_date("end_date", options.end_date)?,
        };
        let mut from = checked_date("current_date", options.current_date)?
            .or(span.start)
            .unwrap_or_else(now_ms);
        if let Some(start) = span.start.filter(|s| from < *s) {
            from = start;
        } else if let Some(end) = span.end.filter(|e| from > *e) {
            from = end;
        }
        Ok(Self {
            fields,
            span,
            current: CronDate::new(ZonedTime::new(from, zone)),
        })
    }

    /// The next run time after the current position (Unix ms), which becomes the position.
    ///
    /// # Errors
    ///
    /// [`CronError::OutOfTimeSpan`] past the end date, [`CronError::NoMatch`] when the pattern
    /// never matches (`0 0 30 2 *` with a weekday, say).
    pub fn next_run(&mut self) -> Result<u64, CronError> {
        let found = search::find_next(&self.fields, self.current, self.span)?;
        self.current = found;
        Ok(u64::try_from(found.ts()).unwrap_or_default())
    }

    /// Up to `count` next run times (fewer when the schedule ends).
    pub fn take(&mut self, count: usize) -> Vec<u64> {
        (0..count).map_while(|_| self.next_run().ok()).collect()
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_millis()).ok())
        .unwrap_or_default()
}
