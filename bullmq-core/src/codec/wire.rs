//! An ordered value tree: what the options (and a backend's own packed arguments) become
//! before they are written as msgpack ([`super::msgpack`], msgpackr's rules) or as JSON (this
//! file's `Serialize`, JavaScript's rules: a whole number prints as `5`, not `5.0`).
//!
//! Public for backends: a store that passes packed arguments to its server builds them as a
//! [`WireValue`] and writes them with [`super::pack_msgpack`], so every msgpack byte comes from one
//! writer.

use std::borrow::Cow;
use std::time::Duration;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

/// One stored value, borrowing its text from the options it was made from.
#[derive(Debug, Clone, PartialEq)]
pub enum WireValue<'a> {
    /// A boolean.
    Bool(bool),
    /// A non-negative integer (written as msgpackr writes a JavaScript number).
    UInt(u64),
    /// A signed integer (written as msgpackr writes a JavaScript number).
    Int(i64),
    /// A JavaScript number that is not an integer, or is out of the integer range.
    Float(f64),
    /// A string.
    Str(Cow<'a, str>),
    /// An array.
    Array(Vec<WireValue<'a>>),
    /// An object, its keys in insertion order.
    Map(WireMap<'a>),
    /// `null`.
    Null,
    /// JavaScript's `undefined` as an object's value: msgpackr (with `encodeUndefinedAsNil`)
    /// writes nil, `JSON.stringify` leaves the key out.
    Undefined,
}

/// An object whose keys keep the order they were inserted in, like a JavaScript object's
/// string keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WireMap<'a>(pub(crate) Vec<(Cow<'a, str>, WireValue<'a>)>);

impl<'a> WireMap<'a> {
    /// An empty map with room for `n` entries (a packer that knows its count saves the
    /// reallocations of growing one entry at a time).
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    /// Appends an entry; `None` appends nothing (the key is absent).
    pub fn push(&mut self, key: impl Into<Cow<'a, str>>, value: impl Into<Option<WireValue<'a>>>) {
        if let Some(value) = value.into() {
            self.0.push((key.into(), value));
        }
    }
}

const JS_SAFE_INT: f64 = 9_007_199_254_740_992.0;

impl Serialize for WireValue<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Bool(b) => s.serialize_bool(*b),
            Self::UInt(n) => s.serialize_u64(*n),
            Self::Int(n) => s.serialize_i64(*n),
            Self::Float(f) if f.fract() == 0.0 && f.abs() < JS_SAFE_INT => {
                // Whole and below 2^53, so the conversion is exact.
                #[allow(clippy::cast_possible_truncation)]
                s.serialize_i64(*f as i64)
            }
            Self::Float(f) => s.serialize_f64(*f),
            Self::Str(text) => s.serialize_str(text),
            Self::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Self::Map(map) => map.serialize(s),
            // `undefined` in an array: `JSON.stringify` writes null.
            Self::Null | Self::Undefined => s.serialize_unit(),
        }
    }
}

impl Serialize for WireMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let defined = |(_, v): &&(Cow<'_, str>, WireValue<'_>)| *v != WireValue::Undefined;
        let mut map = s.serialize_map(Some(self.0.iter().filter(defined).count()))?;
        for (k, v) in self.0.iter().filter(defined) {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'a> From<&'a serde_json::Value> for WireValue<'a> {
    fn from(value: &'a serde_json::Value) -> Self {
        use serde_json::Value;
        match value {
            Value::Null => Self::Null,
            Value::Bool(b) => Self::Bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    Self::UInt(u)
                } else if let Some(i) = n.as_i64() {
                    Self::Int(i)
                } else {
                    Self::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(text) => Self::Str(Cow::Borrowed(text)),
            Value::Array(items) => Self::Array(items.iter().map(Self::from).collect()),
            Value::Object(map) => Self::Map(WireMap(
                map.iter()
                    .map(|(k, v)| (Cow::Borrowed(k.as_str()), Self::from(v)))
                    .collect(),
            )),
        }
    }
}

impl<'a> WireValue<'a> {
    /// A string borrowed from its owner.
    pub fn text(s: &'a str) -> Self {
        Self::Str(Cow::Borrowed(s))
    }

    /// A value Node.js has none for: msgpackr (with `encodeUndefinedAsNil`) writes nil.
    pub fn or_nil(v: Option<Self>) -> Self {
        v.unwrap_or(Self::Null)
    }
}

impl WireValue<'static> {
    /// An unsigned integer.
    pub fn uint(n: impl Into<u64>) -> Self {
        Self::UInt(n.into())
    }

    /// A duration as JavaScript's number of milliseconds (every duration option but
    /// `KeepJobs.age`).
    pub fn millis(d: Duration) -> Self {
        Self::in_units(d, 1_000_000)
    }

    /// A duration as JavaScript's number of seconds (`KeepJobs.age`).
    pub fn seconds(d: Duration) -> Self {
        Self::in_units(d, 1_000_000_000)
    }

    /// A duration in `unit_nanos` units: an integer when whole, else the whole part plus the
    /// fraction, each converted on its own so neither loses digits to the other.
    #[allow(clippy::cast_precision_loss)]
    fn in_units(d: Duration, unit_nanos: u64) -> Self {
        let nanos = d.as_nanos();
        let unit = u128::from(unit_nanos);
        let whole = u64::try_from(nanos / unit).unwrap_or(u64::MAX);
        let rest = nanos % unit;
        if rest == 0 {
            Self::UInt(whole)
        } else {
            Self::Float(whole as f64 + rest as f64 / unit_nanos as f64)
        }
    }
}
