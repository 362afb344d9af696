//! Time zones named as Node.js's luxon names them: `UTC`/`GMT`, `UTC+5:30`-style fixed offsets,
//! `local`/`system`, or an IANA name (any letter case), resolved through chrono-tz.

use std::str::FromStr;

use chrono::{DateTime, Offset, TimeZone};
use chrono_tz::Tz;

use crate::CronError;

/// A zone that tells its UTC offset at any instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// An IANA zone with its daylight-saving rules.
    Iana(Tz),
    /// A constant offset from UTC, in milliseconds (`UTC`, `UTC-3`).
    Fixed(i64),
}

impl Zone {
    /// Resolves a zone name; `None` or an empty name is the system's zone, as luxon's default.
    ///
    /// # Errors
    ///
    /// [`CronError::UnknownTimeZone`] when the name is neither a fixed offset nor an IANA zone.
    pub fn resolve(name: Option<&str>) -> Result<Self, CronError> {
        match name {
            None | Some("") => Ok(Self::system()),
            Some(name) => Self::named(name).ok_or_else(|| CronError::UnknownTimeZone {
                name: name.to_owned(),
            }),
        }
    }

    /// The zone of this machine (`TZ`, else the system setting), UTC when it cannot be told.
    #[must_use]
    pub fn system() -> Self {
        let from_env = std::env::var("TZ")
            .ok()
            .and_then(|tz| Self::iana(tz.trim_start_matches(':')));
        from_env
            .or_else(|| {
                iana_time_zone::get_timezone()
                    .ok()
                    .and_then(|tz| Self::iana(&tz))
            })
            .unwrap_or(Self::Fixed(0))
    }

    /// A zone by name, in luxon's order: system aliases, UTC, fixed offsets, then IANA.
    fn named(name: &str) -> Option<Self> {
        let lowered = name.to_ascii_lowercase();
        match lowered.as_str() {
            "local" | "system" | "default" => Some(Self::system()),
            "utc" | "gmt" => Some(Self::Fixed(0)),
            _ => fixed_offset(&lowered).or_else(|| Self::iana(name)),
        }
    }

    /// An IANA zone; names are case-insensitive, as `Intl` treats them.
    fn iana(name: &str) -> Option<Self> {
        Tz::from_str(name)
            .ok()
            .or_else(|| {
                chrono_tz::TZ_VARIANTS
                    .iter()
                    .copied()
                    .find(|tz| tz.name().eq_ignore_ascii_case(name))
            })
            .map(Self::Iana)
    }

    /// The offset from UTC at `ts_ms` (Unix ms), in milliseconds.
    #[must_use]
    pub fn offset_ms(&self, ts_ms: i64) -> i64 {
        match self {
            Self::Fixed(offset) => *offset,
            Self::Iana(tz) => DateTime::from_timestamp_millis(ts_ms).map_or(0, |utc| {
                let offset = tz.offset_from_utc_datetime(&utc.naive_utc()).fix();
                i64::from(offset.local_minus_utc()) * 1000
            }),
        }
    }
}

/// luxon's `UTC+H[:MM]` / `UTC-H[:MM]` specifier (already lowercased).
fn fixed_offset(lowered: &str) -> Option<Zone> {
    let rest = lowered.strip_prefix("utc")?;
    let sign = match rest.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = match rest[1..].split_once(':') {
        Some((h, m)) => (h, Some(m)),
        None => (&rest[1..], None),
    };
    let digits = |s: &str, lens: &[usize]| {
        (lens.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<i64>().ok())
            .flatten()
    };
    let hours = digits(hours, &[1, 2])?;
    let minutes = match minutes {
        Some(m) => digits(m, &[2])?,
        None => 0,
    };
    Some(Zone::Fixed(sign * (hours * 60 + minutes) * 60_000))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_like_luxon() {
        assert_eq!(Zone::resolve(Some("utc")).unwrap(), Zone::Fixed(0));
        assert_eq!(
            Zone::resolve(Some("UTC-03:30")).unwrap(),
            Zone::Fixed(-(3 * 60 + 30) * 60_000)
        );
        assert_eq!(
            Zone::resolve(Some("america/new_york")).unwrap(),
            Zone::Iana(Tz::America__New_York)
        );
        assert!(matches!(
            Zone::resolve(Some("Mars/Olympus")),
            Err(CronError::UnknownTimeZone { .. })
        ));
        // 2024-07-01T00:00:00Z: New York is on daylight time.
        let ny = Zone::resolve(Some("America/New_York")).unwrap();
        assert_eq!(ny.offset_ms(1_719_792_000_000), -4 * 3_600_000);
    }
}
