//! Instants as the Unix milliseconds Node.js stores for a schedule's start and end dates.

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
    fn chrono_dates_in_any_zone_are_their_instant() {
        let utc = chrono::DateTime::from_timestamp_millis(1_700_000_000_123).unwrap();
        let offset = utc.with_timezone(&chrono::FixedOffset::east_opt(3600).unwrap());
        assert_eq!(UnixMillis::from(offset).get(), 1_700_000_000_123);
    }
}
