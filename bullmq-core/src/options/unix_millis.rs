//! Instants as the Unix milliseconds Node.js stores for a schedule's start and end dates.

use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

/// An instant in Unix milliseconds, from a `u64` of milliseconds, a [`SystemTime`] or a
/// [`chrono::DateTime`] in any time zone.
///
/// An instant before 1970 becomes 1 ms: like any date in the past, and like the negative
/// number Node.js would store, it starts a schedule at once and, as an end date, is refused by
/// an upsert. 1970-01-01T00:00:00Z itself is 0, which Node.js and this crate read as no date.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use bullmq_core::options::UnixMillis;
///
/// let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
/// assert_eq!(UnixMillis::from(at).get(), 1_700_000_000_123);
/// assert_eq!(UnixMillis::from(1_700_000_000_123_u64), UnixMillis::from(at));
///
/// // ISO 8601 text, as Node.js's `new Date(text)` reads it for a `startDate`/`endDate`:
/// let at: UnixMillis = "2023-11-14T22:13:20.123Z".parse()?;
/// assert_eq!(at.get(), 1_700_000_000_123);
/// # Ok::<(), bullmq_core::options::InvalidInstant>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixMillis(u64);

impl UnixMillis {
    /// The milliseconds since 1970-01-01T00:00:00Z.
    #[must_use]
    pub fn get(self) -> u64 {
        self.0
    }

    fn from_signed(millis: i128) -> Self {
        match u64::try_from(millis) {
            Ok(m) => Self(m),
            Err(_) if millis < 0 => Self(1),
            Err(_) => Self(u64::MAX),
        }
    }
}

impl From<u64> for UnixMillis {
    fn from(millis: u64) -> Self {
        Self(millis)
    }
}

impl From<SystemTime> for UnixMillis {
    fn from(at: SystemTime) -> Self {
        match at.duration_since(UNIX_EPOCH) {
            Ok(after) => Self::from_signed(i128::try_from(after.as_millis()).unwrap_or(i128::MAX)),
            Err(before) => {
                let before = i128::try_from(before.duration().as_millis()).unwrap_or(i128::MAX);
                Self::from_signed(-before)
            }
        }
    }
}

impl<Tz: chrono::TimeZone> From<chrono::DateTime<Tz>> for UnixMillis {
    fn from(at: chrono::DateTime<Tz>) -> Self {
        Self::from_signed(i128::from(at.timestamp_millis()))
    }
}

/// Text that is not an ISO 8601 instant, from [`UnixMillis::from_str`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not an ISO 8601 instant: {text:?} ({cause}); write a date and time with its offset, \
     such as 2030-01-31T09:00:00Z or 2030-01-31T10:00:00+01:00, or a date, 2030-01-31 (UTC)"
)]
pub struct InvalidInstant {
    text: String,
    cause: String,
}

impl InvalidInstant {
    /// The text that was refused.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl FromStr for UnixMillis {
    type Err = InvalidInstant;

    /// An ISO 8601 date and time with its offset (`2030-01-31T09:00:00.250Z`,
    /// `2030-01-31T10:00:00+01:00`), or a date alone (`2030-01-31`), which is midnight UTC
    /// as JavaScript reads it. A date and time without an offset is refused: JavaScript reads
    /// it in the process's local zone, which a schedule shared by two runtimes must not
    /// depend on.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let refuse = |cause: String| InvalidInstant {
            text: text.to_owned(),
            cause,
        };
        let trimmed = text.trim();
        if let Ok(at) = chrono::DateTime::parse_from_rfc3339(trimmed) {
            return Ok(Self::from(at));
        }
        if let Ok(day) = chrono::NaiveDate::parse_from_str(trimmed, "%Y-%m-%d") {
            return Ok(Self::from(day.and_time(chrono::NaiveTime::MIN).and_utc()));
        }
        if chrono::NaiveDateTime::parse_from_str(trimmed, "%Y-%m-%dT%H:%M:%S%.f").is_ok() {
            return Err(refuse("it has no offset (Z or +hh:mm)".to_owned()));
        }
        Err(refuse(
            chrono::DateTime::parse_from_rfc3339(trimmed)
                .err()
                .map_or_else(|| "unreadable".to_owned(), |e| e.to_string()),
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;

    #[test]
    fn instants_before_1970_are_a_date_in_the_past() {
        let before = UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(UnixMillis::from(before).get(), 1);
        assert_eq!(UnixMillis::from(UNIX_EPOCH).get(), 0);
        let chrono_before = chrono::DateTime::from_timestamp_millis(-5).unwrap();
        assert_eq!(UnixMillis::from(chrono_before).get(), 1);
    }

    #[test]
    fn iso_text_is_read_as_javascript_reads_it() {
        let at: UnixMillis = "2023-11-14T23:13:20.123+01:00".parse().unwrap();
        assert_eq!(at.get(), 1_700_000_000_123);
        let day: UnixMillis = "2023-11-14".parse().unwrap();
        assert_eq!(day.get(), 1_699_920_000_000);
        let local = "2023-11-14T10:00:00".parse::<UnixMillis>().unwrap_err();
        assert!(local.to_string().contains("no offset"), "{local}");
        let junk = "next tuesday".parse::<UnixMillis>().unwrap_err();
        assert_eq!(junk.text(), "next tuesday");
    }

    #[test]
    fn chrono_dates_in_any_zone_are_their_instant() {
        let utc = chrono::DateTime::from_timestamp_millis(1_700_000_000_123).unwrap();
        let offset = utc.with_timezone(&chrono::FixedOffset::east_opt(3600).unwrap());
        assert_eq!(UnixMillis::from(offset).get(), 1_700_000_000_123);
    }
}
