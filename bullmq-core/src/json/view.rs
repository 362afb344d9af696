//! What `JSON.parse` makes of a stored JSON text, written back compact: the view a Node.js
//! processor has of a job's data.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

/// `text` as `JSON.stringify(JSON.parse(text))` writes it: JavaScript's object key order,
/// no whitespace between tokens, fractional numbers in JavaScript's notation.
///
/// A JavaScript object lists its integer-like keys (canonical array indices, `0` to
/// 2^32 - 2) first, ascending, then the other keys in the order they were first written; a
/// key written twice keeps its first place and its last value. PostgreSQL's `jsonb` prints
/// keys in its own order, with spaces, and numbers in its own notation (`0.0000001`); Node.js
/// reads them back as here.
///
/// Integers and strings keep their text: an integer beyond 2^53 is not rounded as
/// JavaScript would round it. Compact text with no integer-like key is taken as it is,
/// without a parse. Text that is not JSON is returned unchanged: reading it then fails as it
/// would have, with the reader's own error.
///
/// ```
/// use bullmq_core::json::js_view;
///
/// assert_eq!(js_view(r#"{"b": 1, "10": 2, "a": [0.0000001, 1.50], "9": 3}"#),
///            r#"{"9":3,"10":2,"b":1,"a":[1e-7,1.5]}"#);
/// assert_eq!(js_view(r#"{"a":1}"#), r#"{"a":1}"#);
/// ```
#[must_use]
pub fn js_view(text: &str) -> Cow<'_, str> {
    let bare_number = text
        .as_bytes()
        .first()
        .is_some_and(|b| *b == b'-' || b.is_ascii_digit());
    let scan = Scan::of(text);
    if !bare_number && !scan.spaced && !scan.index_keys {
        return Cow::Borrowed(text);
    }
    rewrite(text, Numbers::AsJavaScript)
}

/// Compact JSON text (as the writer produces it) with its objects' keys in JavaScript's
/// order; everything else as it is. Text with no integer-like key is returned at once.
pub(super) fn js_key_order(text: &str) -> Cow<'_, str> {
    if Scan::of(text).index_keys {
        rewrite(text, Numbers::AsWritten)
    } else {
        Cow::Borrowed(text)
    }
}

/// What a rewrite does with a number's text.
#[derive(Clone, Copy)]
enum Numbers {
    /// Keeps it.
    AsWritten,
    /// Writes the double it reads as, as JavaScript does (see [`write_scalar`]).
    AsJavaScript,
}

fn rewrite(text: &str, numbers: Numbers) -> Cow<'_, str> {
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    match write(raw, numbers, 0, &mut out) {
        Ok(()) => Cow::Owned(out),
        Err(_) => Cow::Borrowed(text),
    }
}

/// What one pass over JSON text finds, without parsing it: whitespace between tokens, and
/// keys that are all digits (the only ones JavaScript may move).
struct Scan {
    spaced: bool,
    index_keys: bool,
}

impl Scan {
    fn of(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut scan = Self {
            spaced: false,
            index_keys: false,
        };
        let mut i = 0;
        while i < bytes.len() && !(scan.spaced && scan.index_keys) {
            match bytes[i] {
                b' ' | b'\n' | b'\r' | b'\t' => scan.spaced = true,
                b'"' => {
                    let start = i + 1;
                    let mut end = start;
                    while end < bytes.len() && bytes[end] != b'"' {
                        end += if bytes[end] == b'\\' { 2 } else { 1 };
                    }
                    // A text cut inside an escape ends past its last byte.
                    let end = end.min(bytes.len());
                    let digits = end > start && bytes[start..end].iter().all(u8::is_ascii_digit);
                    if digits && bytes.get(end + 1) == Some(&b':') {
                        scan.index_keys = true;
                    }
                    i = end;
                }
                _ => {}
            }
            i += 1;
        }
        scan
    }
}

/// How deep a value is rewritten: deeper text (which `serde_json`'s own parser would refuse at
/// 128 levels) is returned as stored rather than risk the stack on data from another runtime.
const MAX_DEPTH: usize = 128;

fn write(
    raw: &RawValue,
    numbers: Numbers,
    depth: usize,
    out: &mut String,
) -> serde_json::Result<()> {
    if depth > MAX_DEPTH {
        return Err(serde::de::Error::custom("nested too deep to rewrite"));
    }
    let text = raw.get().trim();
    match text.as_bytes().first() {
        Some(b'{') => {
            let Entries(entries) = serde_json::from_str(text)?;
            let (mut indexed, named): (Vec<_>, Vec<_>) = entries
                .into_iter()
                .partition(|(key, _)| array_index(key).is_some());
            indexed.sort_by_key(|(key, _)| array_index(key));
            out.push('{');
            for (i, (key, value)) in indexed.into_iter().chain(named).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(&key)?);
                out.push(':');
                write(value, numbers, depth + 1, out)?;
            }
            out.push('}');
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text)?;
            out.push('[');
            for (i, item) in items.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, numbers, depth + 1, out)?;
            }
            out.push(']');
        }
        _ => match numbers {
            Numbers::AsJavaScript => write_scalar(text, out),
            Numbers::AsWritten => out.push_str(text),
        },
    }
    Ok(())
}

/// A scalar's text; a number as JavaScript writes the double it reads as, except an integer
/// below 1e21 (at most 21 digits, where JavaScript writes integers in full), which keeps its
/// text so that an integer beyond 2^53 is not rounded.
fn write_scalar(text: &str, out: &mut String) {
    let number = text
        .as_bytes()
        .first()
        .is_some_and(|b| *b == b'-' || b.is_ascii_digit());
    let kept_integer = text.bytes().all(|b| b == b'-' || b.is_ascii_digit())
        && text.bytes().filter(u8::is_ascii_digit).count() <= 21
        && text != "-0";
    match text.parse::<f64>() {
        Ok(n) if number && !kept_integer && n.is_finite() => {
            out.push_str(ryu_js::Buffer::new().format_finite(n));
        }
        _ => out.push_str(text),
    }
}

/// The array index `key` is, as JavaScript orders property keys: a canonical decimal
/// below 2^32 - 1.
fn array_index(key: &str) -> Option<u32> {
    let canonical = key == "0"
        || (key.len() <= 10
            && key
                .as_bytes()
                .first()
                .is_some_and(|b| (b'1'..=b'9').contains(b))
            && key.bytes().all(|b| b.is_ascii_digit()));
    if !canonical {
        return None;
    }
    key.parse::<u32>().ok().filter(|n| *n != u32::MAX)
}

/// An object's entries in the order written, duplicates folded as `JSON.parse` folds them.
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EntriesVisitor)
    }
}

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Entries<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries: Vec<(String, &'de RawValue)> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
            if let Some(&at) = seen.get(&key) {
                entries[at].1 = value;
            } else {
                seen.insert(key.clone(), entries.len());
                entries.push((key, value));
            }
        }
        Ok(Entries(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::{Scan, array_index, js_key_order, js_view};

    #[test]
    fn keys_take_javascripts_order() {
        let text =
            r#"{"b":{"z":1,"1":2},"4294967295":0,"4294967294":1,"01":2,"2":[{"y":0,"0":1}]}"#;
        assert_eq!(
            js_view(text),
            r#"{"2":[{"0":1,"y":0}],"4294967294":1,"b":{"1":2,"z":1},"4294967295":0,"01":2}"#
        );
    }

    #[test]
    fn jsonb_text_is_compacted_and_scalars_kept() {
        let text = "{\"a\": \"x y\", \"bb\": 9007199254740993, \"ccc\": [1.0, null, true, -0.0]}";
        assert_eq!(
            js_view(text),
            r#"{"a":"x y","bb":9007199254740993,"ccc":[1,null,true,0]}"#
        );
        assert_eq!(js_view("0.00000000000000000123"), "1.23e-18");
        assert_eq!(js_view("[1000000000000000000000.0, 1]"), "[1e+21,1]");
        assert_eq!(
            js_view("[1000000000000000000000, 100000000000000000000, -0]"),
            "[1e+21,100000000000000000000,0]"
        );
        assert_eq!(js_view("null"), "null");
        assert_eq!(js_view(" 7 "), "7");
        assert_eq!(js_view("not json"), "not json");
        for cut in [r#"{"12\"#, r#"{"a":"\"#, "\"", r#"{"1":"#, "[1.5, "] {
            assert_eq!(js_view(cut), cut);
        }
    }

    #[test]
    fn a_key_written_twice_keeps_its_place_and_last_value() {
        assert_eq!(
            js_view(r#"{"a":1,"b":2,"a":3,"1":0}"#),
            r#"{"1":0,"a":3,"b":2}"#
        );
    }

    #[test]
    fn the_scan_finds_index_keys_and_spacing_outside_strings_only() {
        let plain = Scan::of(r#"{"a":"x y","d":"2024-01-01","q":"\"1\":","n":["12"]}"#);
        assert!(!plain.spaced);
        assert!(!plain.index_keys);
        assert_eq!(
            js_view(r#"{"a":"x y","d":"12"}"#),
            r#"{"a":"x y","d":"12"}"#
        );
        let keyed = Scan::of(r#"{"a":{"12":1}}"#);
        assert!(keyed.index_keys);
        assert!(Scan::of("[1, 2]").spaced);
    }

    #[test]
    fn key_order_alone_keeps_numbers_and_raw_text() {
        assert_eq!(
            js_key_order(r#"{"b":1.0,"2":[1e1]}"#),
            r#"{"2":[1e1],"b":1.0}"#
        );
        assert_eq!(js_key_order(r#"{"b":1.0}"#), r#"{"b":1.0}"#);
    }

    #[test]
    fn array_indices_are_canonical_and_below_the_limit() {
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("4294967294"), Some(4_294_967_294));
        for key in [
            "",
            "00",
            "01",
            "-1",
            "1.5",
            "4294967295",
            "99999999999",
            "1e3",
            " 1",
        ] {
            assert_eq!(array_index(key), None, "{key}");
        }
    }

    #[test]
    fn text_nested_deeper_than_the_limit_is_returned_as_stored() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(js_view(&deep), deep.as_str());
        let keyed = format!("{}1{}", r#"{"1":"#.repeat(50_000), "}".repeat(50_000));
        assert_eq!(js_view(&keyed), keyed.as_str());
    }
}
