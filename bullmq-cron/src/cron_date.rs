//! The search cursor: a zoned time plus the daylight-saving marks cron-parser leaves on it while
//! stepping, which decide whether a run scheduled in a skipped hour fires at the landing hour
//! and whether a repeated hour fires once.

use crate::civil::{Civil, days_in_month};
use crate::zoned::{Unit, ZonedTime};

/// The cursor of the next-time search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CronDate {
    pub(crate) time: ZonedTime,
    /// First wall-clock hour a spring-forward step skipped.
    pub(crate) dst_start: Option<i64>,
    /// The hour that step landed on.
    pub(crate) dst_start_landing_hour: Option<i64>,
    /// The hour a fall-back step repeated.
    pub(crate) dst_end: Option<i64>,
}

impl CronDate {
    pub(crate) fn new(time: ZonedTime) -> Self {
        Self {
            time,
            dst_start: None,
            dst_start_landing_hour: None,
            dst_end: None,
        }
    }

    pub(crate) fn ts(&self) -> i64 {
        self.time.ts
    }

    pub(crate) fn civil(&self) -> Civil {
        self.time.civil()
    }

    pub(crate) fn clear_dst_start(&mut self) {
        self.dst_start = None;
        self.dst_start_landing_hour = None;
    }

    /// Replaces some wall-clock components (luxon's `set`).
    pub(crate) fn set(&mut self, f: impl FnOnce(&mut Civil)) {
        let mut c = self.civil();
        f(&mut c);
        self.time = self.time.with_civil(c);
    }

    /// One step forward of `unit`: calendar steps land on the start of the next month or day,
    /// hour and minute steps on the start of the next hour or minute.
    fn add_unit(&mut self, unit: Unit) {
        let moved = self.time.plus(unit, 1);
        self.time = match unit {
            Unit::Second => moved,
            _ => moved.start_of(unit),
        };
    }

    /// cron-parser's `applyDateOperation` (forward): a step, and for time units the marks of a
    /// DST change it crossed. `hours_len` is how many hours the pattern allows: a pattern that
    /// runs every hour needs no marks.
    pub(crate) fn step(&mut self, unit: Unit, hours_len: usize) {
        if matches!(unit, Unit::Month | Unit::Day) {
            self.add_unit(unit);
            return;
        }
        let previous_hour = self.civil().hour;
        let previous_offset = self.time.offset();
        self.add_unit(unit);
        let now = self.civil();
        let advance = (now.hour - previous_hour + 24) % 24;
        if self.time.offset() > previous_offset && advance >= 2 {
            if hours_len != 24 {
                self.dst_start = Some((previous_hour + 1) % 24);
                self.dst_start_landing_hour = Some(now.hour);
            }
        } else if advance == 0 && now.minute == 0 && now.second == 0 && hours_len != 24 {
            self.dst_end = Some(now.hour);
        }
    }

    /// True when the offset at the start of the day differs from the offset at its end.
    pub(crate) fn is_dst_transition_day(&self) -> bool {
        let start = self.time.start_of(Unit::Day);
        let end = self.time.end_of(Unit::Day);
        start.offset() != end.offset()
    }

    /// cron-parser's month lengths (February always 29) with the leap-year correction.
    fn last_day_of_month(c: Civil) -> i64 {
        days_in_month(c.year, c.month)
    }

    pub(crate) fn is_last_day_of_month(&self) -> bool {
        let c = self.civil();
        c.day == Self::last_day_of_month(c)
    }

    /// Within the last seven days of the month (the last such weekday).
    pub(crate) fn is_last_weekday_of_month(&self) -> bool {
        let c = self.civil();
        c.day > Self::last_day_of_month(c) - 7
    }
}
