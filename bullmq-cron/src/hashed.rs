//! `H` (hashed) values: a value picked by a seeded generator, as cron-parser picks it, so a
//! pattern with a `hash_seed` gives the same times in both runtimes. Without a seed the pick is
//! random, as in Node.js.

use crate::error::{CronError, CronField};
use crate::fields::Bounds;

/// Most values one field may expand to.
pub(crate) const MAX_FIELD_VALUES: i64 = 256;

/// cron-parser's generator: mulberry32 seeded by the FNV-1a hash of the seed text.
#[derive(Debug, Clone)]
pub(crate) struct SeededRandom(u32);

impl SeededRandom {
    pub(crate) fn new(seed: Option<&str>) -> Self {
        match seed.filter(|s| !s.is_empty()) {
            Some(text) => Self(fnv1a(text)),
            // Node: `Math.floor(Math.random() * 1e10)`, read modulo 2^32 by the generator.
            None => Self(fastrand::u32(..)),
        }
    }

    /// The next value in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x6d2b_79f5);
        let mut t = self.0;
        t = (t ^ (t >> 15)).wrapping_mul(t | 1);
        t ^= t.wrapping_add((t ^ (t >> 7)).wrapping_mul(t | 61));
        f64::from(t ^ (t >> 14)) / 4_294_967_296.0
    }
}

/// FNV-1a over UTF-16 code units, as cron-parser hashes the seed.
fn fnv1a(text: &str) -> u32 {
    text.encode_utf16().fold(2_166_136_261_u32, |h, unit| {
        (h ^ u32::from(unit)).wrapping_mul(16_777_619)
    })
}

/// `floor(r * n)` for a non-negative `n` (a field's width, or a step as large as written), in
/// floating point as Node.js computes it.
#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
fn scale(r: f64, n: i64) -> i64 {
    // In [0, n), an integer: the truncating conversion is exact (saturating past 2^63).
    (r * n as f64).floor() as i64
}

/// One number parsed as JavaScript's `parseInt` reads an all-digit string.
fn number(digits: &str) -> i64 {
    digits.parse().unwrap_or(i64::MAX)
}

/// Replaces every `H`, `H(a-b)`, `H/s` and `H(a-b)/s` in `value` by the values it stands for.
pub(crate) fn expand(
    value: &str,
    bounds: Bounds,
    r: f64,
    field: CronField,
) -> Result<String, CronError> {
    let mut out = String::with_capacity(value.len());
    let mut count = 0_i64;
    let mut rest = value;
    while let Some(at) = rest.find('H') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (range, after) = match take_range(after) {
            Some((a, b, tail)) => (Some((a, b)), tail),
            None => (None, after),
        };
        let (step, after) = match take_step(after) {
            Some((s, tail)) => (Some(s), tail),
            None => (None, after),
        };
        let replacement = match (range, step) {
            (Some((a, b)), Some(s)) => {
                let (lo, hi) = hashed_range(number(a), number(b), bounds, field)?;
                let s = positive_step(s, field)?;
                // ceil((hi - lo + 1) / s), without overflow for a step as large as written.
                count += (hi - lo) / s + 1;
                check_count(count, field)?;
                hashed_step(r, lo, hi, s)
            }
            (Some((a, b)), None) => {
                let (lo, hi) = hashed_range(number(a), number(b), bounds, field)?;
                (scale(r, hi - lo + 1) + lo).to_string()
            }
            (None, Some(s)) => {
                let s = positive_step(s, field)?;
                count += (bounds.max - bounds.min) / s + 1;
                check_count(count, field)?;
                hashed_step(r, bounds.min, bounds.max, s)
            }
            (None, None) => (scale(r, bounds.max - bounds.min + 1) + bounds.min).to_string(),
        };
        out.push_str(&replacement);
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

fn digits_prefix(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_digit).count()
}

/// `(\d+-\d+)` at the start of `s`.
fn take_range(s: &str) -> Option<(&str, &str, &str)> {
    let s = s.strip_prefix('(')?;
    let a_len = digits_prefix(s);
    if a_len == 0 {
        return None;
    }
    let s2 = s[a_len..].strip_prefix('-')?;
    let b_len = digits_prefix(s2);
    if b_len == 0 {
        return None;
    }
    let tail = s2[b_len..].strip_prefix(')')?;
    Some((&s[..a_len], &s2[..b_len], tail))
}

/// `/\d+` at the start of `s`.
fn take_step(s: &str) -> Option<(&str, &str)> {
    let s = s.strip_prefix('/')?;
    let len = digits_prefix(s);
    (len > 0).then(|| (&s[..len], &s[len..]))
}

fn positive_step(step: &str, field: CronField) -> Result<i64, CronError> {
    let s = number(step);
    if s <= 0 {
        return Err(CronError::InvalidStep {
            field,
            step: step.to_owned(),
        });
    }
    Ok(s)
}

fn check_count(count: i64, field: CronField) -> Result<(), CronError> {
    if count > MAX_FIELD_VALUES {
        return Err(CronError::TooManyValues { field });
    }
    Ok(())
}

/// The written range narrowed to the field's bounds.
fn hashed_range(
    min: i64,
    max: i64,
    bounds: Bounds,
    field: CronField,
) -> Result<(i64, i64), CronError> {
    let invalid = |reason| CronError::InvalidRange {
        field,
        range: format!("H({min}-{max})"),
        reason,
    };
    if min > max {
        return Err(invalid("has its start after its end"));
    }
    let (lo, hi) = (min.max(bounds.min), max.min(bounds.max));
    if lo > hi {
        return Err(invalid("has no value inside the field's bounds"));
    }
    Ok((lo, hi))
}

/// The values of a hashed step: every `step` from a seeded offset; one hashed value when the
/// step is wider than the range.
fn hashed_step(r: f64, min: i64, max: i64, step: i64) -> String {
    let offset = scale(r, step);
    let mut values = Vec::new();
    let mut i = min.div_euclid(step) * step + offset;
    while i <= max {
        if i >= min {
            values.push(i.to_string());
        }
        // A step past `i64` ends the values rather than wrapping.
        let Some(next) = i.checked_add(step) else {
            break;
        };
        i = next;
    }
    if values.is_empty() {
        return (scale(r, max - min + 1) + min).to_string();
    }
    values.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_matches_cron_parser() {
        // Node: seededRandom('abc') yields these first (cron-parser 5.10.3).
        let mut r = SeededRandom::new(Some("abc"));
        assert_eq!(r.next_f64(), 0.516_641_998_896_375_3);
        assert_eq!(r.next_f64(), 0.659_622_129_285_708_1);
    }
}
