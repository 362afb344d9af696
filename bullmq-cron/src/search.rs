//! The next-time search, step for step as cron-parser's `findSchedule` walks forward: fix the
//! month, then the day, the hour, the minute, the second; each mismatch moves the cursor to the
//! start of the next candidate unit and starts over. The steps (and the DST marks they leave)
//! decide the answers around clock changes, so they are kept as they are upstream.

use crate::cron_date::CronDate;
use crate::error::CronError;
use crate::fields::{Field, Fields};
use crate::zoned::Unit;

/// [`crate::MAX_DATE_MS`] as the cursor's type.
#[allow(clippy::cast_possible_wrap)] // 8.64e15 fits an i64 many times over.
const MAX_DATE_MS: i64 = crate::MAX_DATE_MS as i64;

/// cron-parser gives up after this many steps.
const LOOP_LIMIT: u32 = 10_000;

/// Bounds of the search, Unix ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TimeSpan {
    pub(crate) start: Option<i64>,
    pub(crate) end: Option<i64>,
}

/// Finds the first matching time after `from` (never `from` itself).
pub(crate) fn find_next(
    fields: &Fields,
    from: CronDate,
    span: TimeSpan,
) -> Result<CronDate, CronError> {
    let hours_len = fields.hour.numbers.len();
    let mut date = from;
    let start_ts = date.ts();
    if date.civil().millisecond > 0 {
        date.set(|c| c.millisecond = 0);
        date.step(Unit::Second, hours_len);
    }
    let mut steps = 1;
    while steps < LOOP_LIMIT {
        steps += 1;
        // Past JavaScript's last date cron-parser has no date; the bound also keeps the
        // cursor's arithmetic far from `i64`'s limits.
        if span.start.is_some_and(|s| date.ts() < s)
            || span.end.is_some_and(|e| date.ts() > e)
            || date.ts() > MAX_DATE_MS
        {
            return Err(CronError::OutOfTimeSpan);
        }
        let c = date.civil();
        if !fields.month.contains(c.month) {
            date.step(Unit::Month, hours_len);
            continue;
        }
        if !matches_day(fields, &date) {
            date.step(Unit::Day, hours_len);
            continue;
        }
        if !match_hour(fields, &mut date, hours_len) {
            continue;
        }
        let c = date.civil();
        if !fields.minute.contains(c.minute) {
            next_minute(fields, &mut date, c.minute, hours_len);
            continue;
        }
        if !fields.second.contains(c.second) {
            next_second(fields, &mut date, c.second, hours_len);
            continue;
        }
        if date.ts() == start_ts {
            date.step(Unit::Second, hours_len);
            continue;
        }
        return Ok(date);
    }
    Err(CronError::NoMatch)
}

fn next_second(fields: &Fields, date: &mut CronDate, second: i64, hours_len: usize) {
    if let Some(next) = fields.second.next_after(second) {
        date.set(|c| c.second = next);
        return;
    }
    date.step(Unit::Minute, hours_len);
    let first = fields.second.first();
    date.set(|c| c.second = first);
}

fn next_minute(fields: &Fields, date: &mut CronDate, minute: i64, hours_len: usize) {
    let first_second = fields.second.first();
    if let Some(next) = fields.minute.next_after(minute) {
        date.set(|c| c.minute = next);
        date.set(|c| c.second = first_second);
        return;
    }
    date.step(Unit::Hour, hours_len);
    let first_minute = fields.minute.first();
    date.set(|c| c.minute = first_minute);
    date.set(|c| c.second = first_second);
}

/// The day-of-month / day-of-week rule: when both are restricted either may match; when one
/// is `*` (or `?`) the other decides.
fn matches_day(fields: &Fields, date: &CronDate) -> bool {
    let c = date.civil();
    let dom = &fields.day_of_month;
    let dow = &fields.day_of_week;
    let matched_dom = dom.contains(c.day) || (dom.has_last && date.is_last_day_of_month());
    let weekday = c.weekday();
    let nth = fields.nth_day_of_week;
    let nth_ok = nth <= 0.0 || (c.day + 6) / 7 == nth_as_day_count(nth);
    let matched_dow = (dow.contains(weekday) && nth_ok)
        || (dow.has_last && date.is_last_weekday_of_month() && last_weekdays(dow, weekday));
    if !dom.wildcard && !dow.wildcard && (matched_dom || matched_dow) {
        return true;
    }
    if matched_dom && dow.wildcard {
        return true;
    }
    dom.wildcard && !dow.wildcard && matched_dow
}

/// `#n` as a whole week count; a fractional `n` (Node accepts `#1.5`) never matches.
fn nth_as_day_count(nth: f64) -> i64 {
    (1..=5).find(|n| f64::from(*n) == nth).map_or(-1, i64::from)
}

/// cron-parser's `L` weekday match: the first digit of any value names the weekday.
fn last_weekdays(dow: &Field, weekday: i64) -> bool {
    let first_digit = |s: &str| {
        s.chars()
            .next()
            .and_then(|c| c.to_digit(10))
            .map(|d| i64::from(d) % 7)
    };
    dow.numbers
        .iter()
        .map(ToString::to_string)
        .chain(dow.texts.iter().cloned())
        .any(|v| first_digit(&v) == Some(weekday))
}

/// cron-parser's `matchHour` (forward): accepts the landing hour of a spring-forward gap when
/// a skipped hour was scheduled, lets a repeated fall-back hour fire once, and otherwise jumps
/// to the next allowed hour (hour by hour on a DST day, so the marks get set).
fn match_hour(fields: &Fields, date: &mut CronDate, hours_len: usize) -> bool {
    let hours = &fields.hour;
    let current = date.civil().hour;
    let is_match = hours.contains(current);
    let is_dst_end = date.dst_end == Some(current);
    if let Some(skipped) = date.dst_start
        && date.dst_start_landing_hour == Some(current)
    {
        let mut hour = skipped;
        while hour != current {
            if hours.contains(hour) {
                return true;
            }
            hour = (hour + 1) % 24;
        }
    }
    if is_dst_end {
        date.dst_end = None;
        date.step(Unit::Hour, hours_len);
        return false;
    }
    if is_match {
        return true;
    }
    date.clear_dst_start();
    let Some(next) = hours.next_after(current) else {
        date.step(Unit::Day, hours_len);
        return false;
    };
    if date.is_dst_transition_day() {
        for _ in 0..(next - current) {
            date.step(Unit::Hour, hours_len);
            if date.civil().hour >= next {
                break;
            }
        }
    } else {
        date.set(|c| c.hour = next);
    }
    let (minute, second) = (fields.minute.first(), fields.second.first());
    date.set(|c| c.minute = minute);
    date.set(|c| c.second = second);
    false
}
