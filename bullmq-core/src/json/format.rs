//! `JSON.stringify`'s number text, plugged into `serde_json` as a [`Formatter`].

use std::borrow::Cow;
use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

/// A compact `serde_json` formatter writing floats as ECMAScript's `Number::toString`
/// (through `ryu-js`): the text `JSON.stringify` gives for the same double.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsFormatter;

impl Formatter for JsFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        if value.is_finite() {
            writer.write_all(ryu_js::Buffer::new().format_finite(value).as_bytes())
        } else {
            // serde_json writes non-finite numbers as `null` before reaching here; kept for
            // any caller that gets here directly, as JavaScript writes them the same way.
            CompactFormatter.write_null(writer)
        }
    }

    /// A JavaScript number is a double; an `f32` is written as the shortest text that reads
    /// back as the same `f32` (`0.1f32` as `0.1`), in the same notation.
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        if value.is_finite() {
            writer.write_all(ryu_js::Buffer::new().format_finite(value).as_bytes())
        } else {
            CompactFormatter.write_null(writer)
        }
    }
}

/// `value` as the JSON text `JSON.stringify` writes for it: compact, numbers in JavaScript's
/// notation, objects' integer-like keys first, ascending (as a JavaScript object holds them).
/// A [`serde_json::value::RawValue`] is written as given.
///
/// # Errors
///
/// When `value`'s `Serialize` fails (a map with keys that are not strings, a custom error).
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(128);
    let mut formatter = Tracking::default();
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out,
        &mut formatter,
    ))?;
    // The serializer writes only UTF-8 (string contents are `str`s, the rest is ASCII).
    let text = String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))?;
    if formatter.raw_whole == Some(text.len()) {
        return Ok(text);
    }
    Ok(match super::view::js_key_order(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(ordered) => ordered,
    })
}

/// [`JsFormatter`], noting a raw fragment that may be the whole value (a `RawValue` given as
/// such is stored as given; its length tells it apart from one nested in a larger value).
#[derive(Default)]
struct Tracking {
    raw_whole: Option<usize>,
    raw_fragments: usize,
}

impl Formatter for &mut Tracking {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        JsFormatter.write_f64(writer, value)
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        JsFormatter.write_f32(writer, value)
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        self.raw_fragments += 1;
        self.raw_whole = (self.raw_fragments == 1).then_some(fragment.len());
        writer.write_all(fragment.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::to_string;

    #[test]
    fn numbers_read_as_javascript_writes_them() {
        let cases: [(f64, &str); 10] = [
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1e15, "1000000000000000"),
            (-0.0, "0"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (0.1 + 0.2, "0.30000000000000004"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::NAN, "null"),
        ];
        for (value, text) in cases {
            assert_eq!(to_string(&value).expect("valid JSON"), text, "{value:e}");
        }
        assert_eq!(to_string(&0.1f32).expect("valid JSON"), "0.1");
        assert_eq!(to_string(&f64::INFINITY).expect("valid JSON"), "null");
    }

    #[test]
    fn objects_take_javascripts_key_order_unless_raw() {
        let map: std::collections::BTreeMap<String, f64> = [
            ("10".to_owned(), 1.0),
            ("9".to_owned(), 0.5),
            ("a".to_owned(), -0.0),
        ]
        .into();
        assert_eq!(
            to_string(&map).expect("valid JSON"),
            r#"{"9":0.5,"10":1,"a":0}"#
        );
        let raw = serde_json::value::RawValue::from_string(r#"{"10":1,"9":2}"#.into())
            .expect("valid JSON");
        assert_eq!(to_string(&raw).expect("valid JSON"), r#"{"10":1,"9":2}"#);
        let nested = serde_json::json!({"b": [raw.clone()], "1": 0});
        assert_eq!(
            to_string(&nested).expect("valid JSON"),
            r#"{"1":0,"b":[{"9":2,"10":1}]}"#
        );
    }

    #[test]
    fn integers_and_raw_text_keep_their_text() {
        assert_eq!(
            to_string(&9_007_199_254_740_993u64).expect("valid JSON"),
            "9007199254740993"
        );
        let raw = serde_json::value::RawValue::from_string("{\"b\": 1.0, \"2\": 2}".into())
            .expect("valid JSON");
        assert_eq!(
            to_string(&raw).expect("valid JSON"),
            "{\"b\": 1.0, \"2\": 2}"
        );
        let nested = serde_json::json!({"a": [1.5, -0.0, 1e300], "n": 12345678901234567u64});
        assert_eq!(
            to_string(&nested).expect("valid JSON"),
            r#"{"a":[1.5,0,1e+300],"n":12345678901234567}"#
        );
    }
}
