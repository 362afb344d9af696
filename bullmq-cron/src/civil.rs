//! Wall-clock date and time components, and their conversion to and from "local milliseconds"
//! (the components read as if they were UTC), as JavaScript's `Date.UTC` does it: components out
//! of range carry over (month 13 is January of the next year, day 0 the last of the month before).

const MS_PER_DAY: i64 = 86_400_000;

/// A wall-clock reading: the calendar date and time in some zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Civil {
    pub(crate) year: i64,
    /// 1..=12 once normalised; may overflow before [`Civil::to_local_ms`].
    pub(crate) month: i64,
    /// 1..=31 once normalised; may overflow before [`Civil::to_local_ms`].
    pub(crate) day: i64,
    pub(crate) hour: i64,
    pub(crate) minute: i64,
    pub(crate) second: i64,
    pub(crate) millisecond: i64,
}

/// True for Gregorian leap years.
pub(crate) fn is_leap_year(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days in `month` of `year`; the month may overflow (13 is next January), as luxon allows.
pub(crate) fn days_in_month(year: i64, month: i64) -> i64 {
    let m = (month - 1).rem_euclid(12) + 1;
    let y = year + (month - m) / 12;
    match m {
        2 if is_leap_year(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (month 1..=12).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01, as (year, month, day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl Civil {
    /// Reads local milliseconds back into components.
    pub(crate) fn from_local_ms(local_ms: i64) -> Self {
        let days = local_ms.div_euclid(MS_PER_DAY);
        let ms_of_day = local_ms.rem_euclid(MS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        Self {
            year,
            month,
            day,
            hour: ms_of_day / 3_600_000,
            minute: ms_of_day / 60_000 % 60,
            second: ms_of_day / 1000 % 60,
            millisecond: ms_of_day % 1000,
        }
    }

    /// The components as local milliseconds, carrying overflow like `Date.UTC`.
    pub(crate) fn to_local_ms(self) -> i64 {
        let year = self.year + (self.month - 1).div_euclid(12);
        let month = (self.month - 1).rem_euclid(12) + 1;
        let days = days_from_civil(year, month, 1) + self.day - 1;
        days * MS_PER_DAY
            + self.hour * 3_600_000
            + self.minute * 60_000
            + self.second * 1000
            + self.millisecond
    }

    /// Day of the week, 0 = Sunday .. 6 = Saturday.
    pub(crate) fn weekday(self) -> i64 {
        let days = days_from_civil(self.year, self.month, self.day);
        (days + 4).rem_euclid(7)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_carries_like_date_utc() {
        let c = Civil::from_local_ms(1_709_254_800_123); // 2024-03-01T01:00:00.123Z
        assert_eq!(
            (c.year, c.month, c.day, c.hour, c.millisecond),
            (2024, 3, 1, 1, 123)
        );
        assert_eq!(c.to_local_ms(), 1_709_254_800_123);
        let overflow = Civil {
            month: 13,
            day: 32,
            ..c
        };
        let back = Civil::from_local_ms(overflow.to_local_ms());
        assert_eq!((back.year, back.month, back.day), (2025, 2, 1));
        assert_eq!(c.weekday(), 5); // a Friday
        assert_eq!(days_in_month(2024, 14), 28); // February 2025
    }
}
