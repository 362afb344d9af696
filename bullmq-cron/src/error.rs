//! What can be wrong with a cron pattern, its time zone, or a search.

/// A cron field, as named in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CronField {
    /// Seconds, 0-59 (the first of six fields).
    Second,
    /// Minutes, 0-59.
    Minute,
    /// Hours, 0-23.
    Hour,
    /// Day of the month, 1-31, or `L`.
    DayOfMonth,
    /// Month, 1-12 or `jan`..`dec`.
    Month,
    /// Day of the week, 0-7 (0 and 7 are Sunday) or `sun`..`sat`, with `L` and `#`.
    DayOfWeek,
}

impl std::fmt::Display for CronField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::DayOfMonth => "day of month",
            Self::Month => "month",
            Self::DayOfWeek => "day of week",
        })
    }
}

/// A cron pattern cron-parser would refuse, or a search that found no time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CronError {
    /// More than six fields.
    #[error(
        "invalid cron pattern {pattern:?}: {count} fields, expected at most 6 (5 without seconds, 6 with seconds first)"
    )]
    TooManyFields {
        /// The pattern.
        pattern: String,
        /// How many fields it has.
        count: usize,
    },
    /// Longer than cron-parser's 1024 characters.
    #[error("invalid cron pattern: {len} characters, at most 1024 allowed")]
    TooLong {
        /// Its length in UTF-16 units.
        len: usize,
    },
    /// A three-letter name that is no month (in the month field) or weekday (in the weekday
    /// field).
    #[error("invalid cron {field} field: unknown name {alias:?}")]
    UnknownName {
        /// The field.
        field: CronField,
        /// The name as written (lowercased).
        alias: String,
    },
    /// Characters the field does not allow.
    #[error("invalid cron {field} field {value:?}: unexpected characters")]
    InvalidCharacters {
        /// The field.
        field: CronField,
        /// The field's text.
        value: String,
    },
    /// A value outside the field's range.
    #[error("invalid cron {field} field: {value} is outside {min}-{max}")]
    OutOfRange {
        /// The field.
        field: CronField,
        /// The offending value.
        value: String,
        /// Lowest allowed.
        min: i64,
        /// Highest allowed.
        max: i64,
    },
    /// A range that is not `a-b` with a <= b inside the field's bounds.
    #[error("invalid cron {field} field: range {range:?} {reason}")]
    InvalidRange {
        /// The field.
        field: CronField,
        /// The range as written.
        range: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A step that is not a positive number, or more than one `/`.
    #[error("invalid cron {field} field: step {step:?} must be a positive number")]
    InvalidStep {
        /// The field.
        field: CronField,
        /// The step (or the whole item with several `/`).
        step: String,
    },
    /// An empty item in a list (`1,,2`).
    #[error("invalid cron {field} field: empty list item")]
    EmptyListItem {
        /// The field.
        field: CronField,
    },
    /// More than 256 values in one field.
    #[error("invalid cron {field} field: more than 256 values")]
    TooManyValues {
        /// The field.
        field: CronField,
    },
    /// The same value twice (`1,1`, or `0,7` for Sunday).
    #[error("invalid cron {field} field: {value} appears twice")]
    DuplicateValue {
        /// The field.
        field: CronField,
        /// The repeated value.
        value: String,
    },
    /// `#` together with a list, range or step, or an occurrence outside 1-5.
    #[error("invalid cron day of week {value:?}: `#` needs one weekday and an occurrence 1-5")]
    InvalidNthWeekday {
        /// The field's text.
        value: String,
    },
    /// `L` alone in the day-of-week field (cron-parser wants `5L`, the last Friday).
    #[error("invalid cron day of week: `L` needs a weekday before it (`5L` is the last Friday)")]
    StandaloneLast,
    /// A single month and a day of month it never has (`30 2`).
    #[error("invalid cron pattern: month {month} has no day {day}")]
    ImpossibleDayOfMonth {
        /// The day of month.
        day: String,
        /// The month.
        month: i64,
    },
    /// The time zone name is not known.
    #[error("unknown time zone {name:?} (expected an IANA name such as Europe/London, or UTC)")]
    UnknownTimeZone {
        /// The name given.
        name: String,
    },
    /// The next time would be before the start date or after the end date (or after the
    /// last instant a JavaScript `Date` holds, [`MAX_DATE_MS`](crate::MAX_DATE_MS)).
    #[error("no run time between the start and end dates")]
    OutOfTimeSpan,
    /// A date option past the last instant a JavaScript `Date` holds (where cron-parser has an
    /// invalid date).
    #[error(
        "invalid cron option {option}: {millis} ms is after the last date JavaScript holds \
         ({max} ms, year 275760); pass a Unix time in milliseconds"
    )]
    DateOutOfRange {
        /// `current_date`, `start_date` or `end_date`.
        option: &'static str,
        /// The value given.
        millis: u64,
        /// [`MAX_DATE_MS`](crate::MAX_DATE_MS).
        max: u64,
    },
    /// The search gave up, as cron-parser does, after 10,000 steps: the pattern (almost) never
    /// matches.
    #[error("no run time found: the pattern never matches (search limit reached)")]
    NoMatch,
}
