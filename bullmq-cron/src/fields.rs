//! The six parsed fields and the checks cron-parser makes on them once parsed: values inside the
//! bounds, no value twice, no impossible single day of a single month.

use crate::error::{CronError, CronField};

/// Month lengths as cron-parser writes them (February 29: leap years are checked apart).
pub(crate) const DAYS_IN_MONTH: [i64; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/// A field's bounds and the letters it allows besides numbers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) min: i64,
    pub(crate) max: i64,
    /// `L` for the day fields.
    pub(crate) last: bool,
}

impl CronField {
    pub(crate) fn bounds(self) -> Bounds {
        let (min, max, last) = match self {
            Self::Second | Self::Minute => (0, 59, false),
            Self::Hour => (0, 23, false),
            Self::DayOfMonth => (1, 31, true),
            Self::Month => (1, 12, false),
            Self::DayOfWeek => (0, 7, true),
        };
        Bounds { min, max, last }
    }
}

/// One parsed list item: a number, or text carrying `L` (`L`, `5L`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Num(i64),
    Text(String),
}

impl Value {
    fn describe(&self) -> String {
        match self {
            Self::Num(n) => n.to_string(),
            Self::Text(t) => t.clone(),
        }
    }
}

/// A parsed field, values sorted as cron-parser sorts them (numbers first, ascending).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) numbers: Vec<i64>,
    pub(crate) texts: Vec<String>,
    /// Written as `*` or `?`: what the day-of-month/day-of-week rule looks at.
    pub(crate) wildcard: bool,
    /// `L` somewhere in the field.
    pub(crate) has_last: bool,
}

impl Field {
    /// Sorts and checks the values of `field`, written as `raw`.
    pub(crate) fn new(field: CronField, values: Vec<Value>, raw: &str) -> Result<Self, CronError> {
        let bounds = field.bounds();
        let mut seen: Vec<&Value> = Vec::with_capacity(values.len());
        for value in &values {
            let valid = match value {
                Value::Num(n) => (bounds.min..=bounds.max).contains(n),
                Value::Text(t) => bounds.last && is_digits_then_last(t),
            };
            if !valid {
                return Err(CronError::OutOfRange {
                    field,
                    value: value.describe(),
                    min: bounds.min,
                    max: bounds.max,
                });
            }
            if seen.contains(&value) {
                return Err(CronError::DuplicateValue {
                    field,
                    value: value.describe(),
                });
            }
            seen.push(value);
        }
        let has_last = raw.contains('L') || values.iter().any(|v| *v == Value::Text("L".into()));
        let mut numbers = Vec::new();
        let mut texts = Vec::new();
        for value in values {
            match value {
                Value::Num(n) => numbers.push(n),
                Value::Text(t) => texts.push(t),
            }
        }
        numbers.sort_unstable();
        texts.sort();
        Ok(Self {
            numbers,
            texts,
            wildcard: raw == "*" || raw == "?",
            has_last,
        })
    }

    pub(crate) fn contains(&self, n: i64) -> bool {
        self.numbers.contains(&n)
    }

    /// The smallest allowed value.
    pub(crate) fn first(&self) -> i64 {
        self.numbers.first().copied().unwrap_or_default()
    }

    /// The smallest allowed value above `n`.
    pub(crate) fn next_after(&self, n: i64) -> Option<i64> {
        self.numbers.iter().copied().find(|v| *v > n)
    }
}

/// `^\d{0,2}L$`.
fn is_digits_then_last(t: &str) -> bool {
    t.strip_suffix('L')
        .is_some_and(|d| d.len() <= 2 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The six fields of a parsed pattern.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fields {
    pub(crate) second: Field,
    pub(crate) minute: Field,
    pub(crate) hour: Field,
    pub(crate) day_of_month: Field,
    pub(crate) month: Field,
    pub(crate) day_of_week: Field,
    /// `#n`: the n-th such weekday of the month; 0 when absent.
    pub(crate) nth_day_of_week: f64,
}

impl Fields {
    /// Checks across fields: a single month with a single day it never has is refused, unless
    /// the day of week (OR-ed with it) can still match.
    pub(crate) fn check(self) -> Result<Self, CronError> {
        if let [month] = self.month.numbers[..]
            && !self.day_of_month.has_last
            && self.day_of_week.wildcard
        {
            let first = self
                .day_of_month
                .numbers
                .first()
                .map(ToString::to_string)
                .or_else(|| self.day_of_month.texts.first().cloned())
                .unwrap_or_default();
            let day: Option<i64> = js_parse_int(&first);
            let days = usize::try_from(month - 1)
                .ok()
                .and_then(|i| DAYS_IN_MONTH.get(i))
                .copied()
                .unwrap_or(31);
            if day.is_none_or(|d| d > days) {
                return Err(CronError::ImpossibleDayOfMonth { day: first, month });
            }
        }
        Ok(self)
    }
}

/// JavaScript's `parseInt(s, 10)`: optional sign and leading digits; `None` for NaN.
pub(crate) fn js_parse_int(s: &str) -> Option<i64> {
    let s = s.trim_start();
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if len == 0 {
        return None;
    }
    let n = rest[..len].parse::<i64>().unwrap_or(i64::MAX);
    Some(if negative { -n } else { n })
}
