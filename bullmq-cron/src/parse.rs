//! Pattern text to fields, the way cron-parser 5 reads it: shorthand names (`@daily`), 1 to 6
//! fields (missing leading fields default to second `0` and `*`), month and weekday names, `*`
//! and `?`, `H`, lists, ranges, steps, `L` and `#`.
//!
//! cron-parser works by rewriting the field's text (names to numbers, `*` to `min-max`, `H` to
//! its values) before reading the list; we do the same so that odd inputs are accepted or
//! refused exactly as in Node.js.

use crate::error::{CronError, CronField};
use crate::fields::{Bounds, DAYS_IN_MONTH, Field, Fields, Value, js_parse_int};
use crate::hashed::{self, MAX_FIELD_VALUES, SeededRandom};

const MAX_EXPRESSION_LENGTH: usize = 1024;

/// cron-parser's predefined expressions (matched exactly, case-sensitive).
fn predefined(expression: &str) -> Option<&'static str> {
    Some(match expression {
        "@yearly" | "@annually" => "0 0 0 1 1 *",
        "@monthly" => "0 0 0 1 * *",
        "@weekly" => "0 0 0 * * 0",
        "@daily" => "0 0 0 * * *",
        "@hourly" => "0 0 * * * *",
        "@minutely" => "0 * * * * *",
        "@secondly" => "* * * * * *",
        "@weekdays" => "0 0 0 * * 1-5",
        "@weekends" => "0 0 0 * * 0,6",
        _ => return None,
    })
}

/// Parses a pattern; `hash_seed` fixes the values of `H`.
pub(crate) fn parse(expression: &str, hash_seed: Option<&str>) -> Result<Fields, CronError> {
    let mut rand = SeededRandom::new(hash_seed);
    let expression = predefined(expression).unwrap_or(expression);
    let expression = if expression.is_empty() {
        "0 * * * * *"
    } else {
        expression
    };
    let len = expression.encode_utf16().count();
    if len > MAX_EXPRESSION_LENGTH {
        return Err(CronError::TooLong { len });
    }
    let mut atoms: Vec<&str> = expression.split_whitespace().collect();
    if atoms.is_empty() {
        atoms.push("");
    }
    if atoms.len() > 6 {
        return Err(CronError::TooManyFields {
            pattern: expression.to_owned(),
            count: atoms.len(),
        });
    }
    let defaults = ["0", "*", "*", "*", "*", "*"];
    let mut raw: Vec<&str> = defaults[..6 - atoms.len()].to_vec();
    raw.extend(atoms);
    let [second, minute, hour, dom, month, dow] = raw[..] else {
        unreachable!("six fields after filling the defaults");
    };

    let second_v = parse_field(CronField::Second, second, rand.next_f64())?;
    let minute_v = parse_field(CronField::Minute, minute, rand.next_f64())?;
    let hour_v = parse_field(CronField::Hour, hour, rand.next_f64())?;
    let month_v = parse_field(CronField::Month, month, rand.next_f64())?;
    let dom_v = parse_field(CronField::DayOfMonth, dom, rand.next_f64())?;
    let (dow_text, nth) = parse_nth_day(dow)?;
    let dow_v = parse_field(CronField::DayOfWeek, dow_text, rand.next_f64())?;

    let dom_v = only_days_the_month_has(&month_v, dom_v);
    let day_of_week = Field::new(CronField::DayOfWeek, dow_v, dow)?;
    if day_of_week.texts.iter().any(|t| t == "L") {
        return Err(CronError::StandaloneLast);
    }
    Fields {
        second: Field::new(CronField::Second, second_v, second)?,
        minute: Field::new(CronField::Minute, minute_v, minute)?,
        hour: Field::new(CronField::Hour, hour_v, hour)?,
        day_of_month: Field::new(CronField::DayOfMonth, dom_v, dom)?,
        month: Field::new(CronField::Month, month_v, month)?,
        day_of_week,
        nth_day_of_week: nth.unwrap_or(0.0),
    }
    .check()
}

/// With a single month, days it never has are dropped (unless none would be left).
fn only_days_the_month_has(month: &[Value], days: Vec<Value>) -> Vec<Value> {
    let [Value::Num(m)] = month else {
        return days;
    };
    let limit = usize::try_from(m - 1)
        .ok()
        .and_then(|i| DAYS_IN_MONTH.get(i))
        .copied()
        .unwrap_or(31);
    let kept: Vec<Value> = days
        .iter()
        .filter(|v| !matches!(v, Value::Num(d) if *d > limit))
        .cloned()
        .collect();
    if kept.is_empty() { days } else { kept }
}

/// Splits `weekday#n`; `#` cannot be combined with a list, range or step.
fn parse_nth_day(raw: &str) -> Result<(&str, Option<f64>), CronError> {
    let atoms: Vec<&str> = raw.split('#').collect();
    if atoms.len() <= 1 {
        return Ok((raw, None));
    }
    let invalid = || CronError::InvalidNthWeekday {
        value: raw.to_owned(),
    };
    if raw.contains([',', '-', '/']) {
        return Err(invalid());
    }
    let nth = js_number(atoms[atoms.len() - 1]).ok_or_else(invalid)?;
    if atoms.len() > 2 || !(1.0..=5.0).contains(&nth) {
        return Err(invalid());
    }
    Ok((atoms[0], Some(nth)))
}

/// JavaScript's `Number(text)` for decimal text (`""` is 0); `None` for NaN.
fn js_number(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() {
        return Some(0.0);
    }
    if t.bytes()
        .any(|b| b.is_ascii_alphabetic() && !matches!(b, b'e' | b'E'))
    {
        return None;
    }
    t.parse().ok()
}

/// The names `field` takes: month names in the month field, weekday names in the weekday
/// field, never the other's (cron-parser 5.10.4, which bullmq 6.7.6 pins; 5.10.3 took both).
fn name_value(field: CronField, name: &str) -> Option<i64> {
    const MONTHS: [(&str, i64); 12] = [
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ];
    const WEEKDAYS: [(&str, i64); 7] = [
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ];
    let names: &[(&str, i64)] = if field == CronField::Month {
        &MONTHS
    } else {
        &WEEKDAYS
    };
    names.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

/// Replaces every run of three ASCII letters by the number it names.
fn replace_names(field: CronField, value: &str) -> Result<String, CronError> {
    let bytes = value.as_bytes();
    let mut out = String::with_capacity(value.len());
    let mut i = 0;
    while i < bytes.len() {
        let three = bytes.get(i..i + 3);
        if let Some(three) = three.filter(|t| t.iter().all(u8::is_ascii_alphabetic)) {
            let name = String::from_utf8_lossy(three).to_ascii_lowercase();
            let n =
                name_value(field, &name).ok_or(CronError::UnknownName { field, alias: name })?;
            out.push_str(&n.to_string());
            i += 3;
        } else {
            let ch = value[i..].chars().next().unwrap_or_default();
            out.push(ch);
            i += ch.len_utf8().max(1);
        }
    }
    Ok(out)
}

/// cron-parser's character check: only the field's characters, or a text containing an `H`
/// form (which it lets through whatever surrounds it).
fn valid_chars(field: CronField, value: &str) -> bool {
    let bounds = field.bounds();
    let plain = !value.is_empty()
        && value.chars().all(|c| {
            c.is_ascii_digit()
                || matches!(c, '?' | ',' | '*' | 'H' | '/' | '-')
                || (bounds.last && c == 'L')
                || (field == CronField::DayOfWeek && c == '#')
        });
    plain || contains_hash_form(value)
}

/// `H(\d+-\d+)`, `H/\d+` anywhere in `value`.
fn contains_hash_form(value: &str) -> bool {
    value.match_indices('H').any(|(at, _)| {
        let after = &value[at + 1..];
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        if let Some(step) = after.strip_prefix('/') {
            return digits(step) > 0;
        }
        let Some(range) = after.strip_prefix('(') else {
            return false;
        };
        let a = digits(range);
        let Some(rest) = range[a..].strip_prefix('-').filter(|_| a > 0) else {
            return false;
        };
        let b = digits(rest);
        b > 0 && rest[b..].starts_with(')')
    })
}

/// One field's text to its values.
fn parse_field(field: CronField, raw: &str, random: f64) -> Result<Vec<Value>, CronError> {
    let named;
    let mut value = raw;
    if matches!(field, CronField::Month | CronField::DayOfWeek) {
        named = replace_names(field, raw)?;
        value = &named;
    }
    if !valid_chars(field, value) {
        return Err(CronError::InvalidCharacters {
            field,
            value: raw.to_owned(),
        });
    }
    let bounds = field.bounds();
    let wildcard = format!("{}-{}", bounds.min, bounds.max);
    let value = value.replace(['*', '?'], &wildcard);
    let value = hashed::expand(&value, bounds, random, field)?;
    parse_sequence(field, &value, bounds)
}

/// What one list item reads as: a range's values, or a single value.
enum Item {
    Many(Vec<i64>),
    One(Value),
}

fn parse_sequence(field: CronField, value: &str, bounds: Bounds) -> Result<Vec<Value>, CronError> {
    let mut stack = Vec::new();
    for atom in value.split(',') {
        if i64::try_from(stack.len()).unwrap_or(i64::MAX) > MAX_FIELD_VALUES {
            return Err(CronError::TooManyValues { field });
        }
        if atom.is_empty() {
            return Err(CronError::EmptyListItem { field });
        }
        match parse_repeat(field, atom, bounds)? {
            Item::Many(values) => stack.extend(values.into_iter().map(Value::Num)),
            Item::One(value) => stack.push(single(field, value, bounds)?),
        }
    }
    Ok(stack)
}

/// A single value: text with `L` as it is, otherwise a number inside the bounds (weekday 7
/// becomes 0).
fn single(field: CronField, value: Value, bounds: Bounds) -> Result<Value, CronError> {
    let text = match &value {
        Value::Num(n) => n.to_string(),
        Value::Text(t) => t.clone(),
    };
    if bounds.last && text.contains('L') {
        return Ok(value);
    }
    let n = js_parse_int(&text).filter(|n| (bounds.min..=bounds.max).contains(n));
    let Some(n) = n else {
        return Err(CronError::OutOfRange {
            field,
            value: text,
            min: bounds.min,
            max: bounds.max,
        });
    };
    Ok(if field == CronField::DayOfWeek {
        Value::Num(n % 7)
    } else {
        value
    })
}

/// `a/s` (from a to the field's max), `a-b/s`, or a plain item.
fn parse_repeat(field: CronField, atom: &str, bounds: Bounds) -> Result<Item, CronError> {
    let parts: Vec<&str> = atom.split('/').collect();
    match parts[..] {
        [base, step] => {
            let base = if base.contains('-') {
                base.to_owned()
            } else {
                format!("{base}-{}", bounds.max)
            };
            parse_range(field, &base, js_parse_int(step), step, bounds)
        }
        [_] => parse_range(field, atom, Some(1), "1", bounds),
        _ => Err(CronError::InvalidStep {
            field,
            step: atom.to_owned(),
        }),
    }
}

fn parse_range(
    field: CronField,
    value: &str,
    step: Option<i64>,
    step_text: &str,
    bounds: Bounds,
) -> Result<Item, CronError> {
    let parts: Vec<&str> = value.split('-').collect();
    if parts.len() <= 1 {
        let one = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            Value::Num(value.parse().unwrap_or(i64::MAX))
        } else {
            Value::Text(value.to_owned())
        };
        return Ok(Item::One(one));
    }
    let invalid = |reason| CronError::InvalidRange {
        field,
        range: value.to_owned(),
        reason,
    };
    // `1-2-3` (cron-parser 5.10.4 refuses it; 5.10.3 read it as `1-2`).
    if parts.len() > 2 {
        return Err(invalid("has more than two ends"));
    }
    let (min, max) = (js_parse_int(parts[0]), js_parse_int(parts[1]));
    let (Some(min), Some(max)) = (min, max) else {
        return Err(invalid("is not two numbers"));
    };
    if min < bounds.min || max > bounds.max {
        return Err(invalid("goes outside the field's bounds"));
    }
    if min > max {
        return Err(invalid("has its start after its end"));
    }
    let step = step
        .filter(|s| *s > 0)
        .ok_or_else(|| CronError::InvalidStep {
            field,
            step: step_text.to_owned(),
        })?;
    let mut values = Vec::new();
    // A weekday range ending on Sunday (7) that its step reaches also holds Sunday as 0.
    if field == CronField::DayOfWeek && max % 7 == 0 && (max - min) % step == 0 {
        values.push(0);
    }
    let mut i = min;
    while i <= max {
        if !values.contains(&i) {
            values.push(i);
        }
        // A step past `i64` (an over-long number reads as its largest) ends the range.
        let Some(next) = i.checked_add(step) else {
            break;
        };
        i = next;
    }
    Ok(Item::Many(values))
}
