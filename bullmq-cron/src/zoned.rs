//! An instant read in a zone, with the calendar arithmetic of luxon (which cron-parser uses):
//! time units move the instant, calendar units move the wall clock and then look for an instant
//! showing that wall clock.
//!
//! How a wall-clock time is turned back into an instant decides every DST edge case, so
//! [`ZonedTime::at_local`] follows luxon's `fixOffset` step by step: guess with the current
//! offset, correct once, and for a time the clocks skip (spring forward) keep the wall clock
//! read with the earlier offset, which lands one gap later. An ambiguous time (fall back) keeps
//! whichever offset the guess had, so stepping forward stays on the same side.

use crate::civil::{Civil, days_in_month};
use crate::zone::Zone;

/// Units that can be added or started from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

/// An instant (Unix ms) and the zone it is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ZonedTime {
    pub(crate) ts: i64,
    pub(crate) zone: Zone,
}

impl ZonedTime {
    pub(crate) fn new(ts: i64, zone: Zone) -> Self {
        Self { ts, zone }
    }

    /// The zone's offset at this instant, ms.
    pub(crate) fn offset(self) -> i64 {
        self.zone.offset_ms(self.ts)
    }

    /// The wall clock at this instant.
    pub(crate) fn civil(self) -> Civil {
        Civil::from_local_ms(self.ts + self.offset())
    }

    /// luxon's `fixOffset`: the instant showing `local_ms`, starting from the offset `guess`.
    fn at_local(&self, local_ms: i64, guess: i64) -> Self {
        let mut utc = local_ms - guess;
        let o2 = self.zone.offset_ms(utc);
        if o2 == guess {
            return Self::new(utc, self.zone);
        }
        utc -= o2 - guess;
        let o3 = self.zone.offset_ms(utc);
        if o2 == o3 {
            return Self::new(utc, self.zone);
        }
        // A skipped wall-clock time: read it with the smaller offset.
        Self::new(local_ms - o2.min(o3), self.zone)
    }

    /// luxon's `set`: replaces wall-clock components, keeping the current offset as the guess.
    pub(crate) fn with_civil(self, civil: Civil) -> Self {
        self.at_local(civil.to_local_ms(), self.offset())
    }

    /// luxon's `plus`: calendar units on the wall clock, time units on the instant.
    pub(crate) fn plus(self, unit: Unit, amount: i64) -> Self {
        let ms = match unit {
            Unit::Hour => 3_600_000,
            Unit::Minute => 60_000,
            Unit::Second => 1000,
            Unit::Month | Unit::Day => 0,
        };
        if ms != 0 {
            return Self::new(self.ts + ms * amount, self.zone);
        }
        let mut c = self.civil();
        if unit == Unit::Month {
            c.month += amount;
            c.day = c.day.min(days_in_month(c.year, c.month));
        } else {
            c.day += amount;
        }
        self.at_local(c.to_local_ms(), self.offset())
    }

    /// Moves the instant by `ms` milliseconds.
    pub(crate) fn plus_ms(self, ms: i64) -> Self {
        Self::new(self.ts + ms, self.zone)
    }

    /// luxon's `startOf`: zeroes the wall-clock components below `unit`.
    pub(crate) fn start_of(self, unit: Unit) -> Self {
        let mut c = self.civil();
        c.millisecond = 0;
        if unit != Unit::Second {
            c.second = 0;
        }
        if matches!(unit, Unit::Hour | Unit::Day | Unit::Month) {
            c.minute = 0;
        }
        if matches!(unit, Unit::Day | Unit::Month) {
            c.hour = 0;
        }
        if unit == Unit::Month {
            c.day = 1;
        }
        self.with_civil(c)
    }

    /// luxon's `endOf`: the last millisecond of the current `unit`.
    pub(crate) fn end_of(self, unit: Unit) -> Self {
        self.plus(unit, 1).start_of(unit).plus_ms(-1)
    }
}
