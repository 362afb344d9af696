//! The search rule: what a needle is and which jobs it matches.

use serde_json::Value;

/// What a search looks for, parsed from the text typed.
///
/// A JSON object or array asks for containment in the data, as `jsonb @>`: every key of an
/// object, every element of an array, at any depth. Anything else is text: it matches a job
/// whose id is exactly it, or whose name, or some string, number or boolean anywhere in its
/// data, contains it, ignoring case.
///
/// ```
/// use bullmq_core::search::Needle;
///
/// let needle = Needle::parse(" 42 ").expect("not empty");
/// assert_eq!(needle.as_str(), "42");
/// assert!(needle.matches("42", "x", "{}"));
/// assert!(needle.matches("1", "x", r#"{"n":[1420]}"#));
/// assert!(!needle.matches("1", "x", r#"{"42":true}"#), "keys are not values");
/// assert!(Needle::parse("   ").is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Needle {
    raw: String,
    kind: Kind,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    /// Contained in the data.
    Json(Value),
    /// Part of the name or of a value, lower-cased; or the whole id.
    Text(String),
}

impl Needle {
    /// The needle `text` asks for (trimmed); `None` when it is empty.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let raw = text.trim();
        if raw.is_empty() {
            return None;
        }
        let kind = match serde_json::from_str::<Value>(raw) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => Kind::Json(v),
            _ => Kind::Text(raw.to_lowercase()),
        };
        Some(Self {
            raw: raw.to_owned(),
            kind,
        })
    }

    /// The text as typed, trimmed.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The JSON value looked for by containment, when the needle is an object or array.
    #[must_use]
    pub fn contained(&self) -> Option<&Value> {
        match &self.kind {
            Kind::Json(v) => Some(v),
            Kind::Text(_) => None,
        }
    }

    /// The text looked for in names and values, lower-cased, when the needle is text.
    #[must_use]
    pub fn folded(&self) -> Option<&str> {
        match &self.kind {
            Kind::Json(_) => None,
            Kind::Text(t) => Some(t),
        }
    }

    /// Whether a job with this id, name and data (its JSON text) matches; data that is not
    /// JSON matches no value (the id and name still count).
    #[must_use]
    pub fn matches(&self, id: &str, name: &str, data: &str) -> bool {
        let data = || serde_json::from_str::<Value>(data);
        match &self.kind {
            Kind::Json(needle) => data().is_ok_and(|hay| contains(&hay, needle)),
            Kind::Text(folded) => {
                id == self.raw
                    || name.to_lowercase().contains(folded.as_str())
                    || data().is_ok_and(|v| in_value(&v, folded))
            }
        }
    }
}

/// Whether a string, number or boolean at any depth of `value` contains `folded`, ignoring
/// case.
fn in_value(value: &Value, folded: &str) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => b.to_string().contains(folded),
        Value::Number(n) => n.to_string().contains(folded),
        Value::String(s) => s.to_lowercase().contains(folded),
        Value::Array(items) => items.iter().any(|v| in_value(v, folded)),
        Value::Object(map) => map.values().any(|v| in_value(v, folded)),
    }
}

/// `hay @> needle`, as PostgreSQL defines containment for jsonb.
///
/// ```
/// use bullmq_core::search::contains;
/// use serde_json::json;
///
/// assert!(contains(&json!({"a": {"b": 1, "c": 2}}), &json!({"a": {"b": 1}})));
/// assert!(contains(&json!([1, 2, 3]), &json!([3, 1])));
/// assert!(!contains(&json!({"a": 1}), &json!({"a": 2})));
/// ```
#[must_use]
pub fn contains(hay: &Value, needle: &Value) -> bool {
    match (hay, needle) {
        (Value::Object(h), Value::Object(n)) => n
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| contains(hv, v))),
        (Value::Array(h), Value::Array(n)) => {
            n.iter().all(|nv| h.iter().any(|hv| contains(hv, nv)))
        }
        // A top-level array contains a scalar it holds.
        (Value::Array(h), n) if !n.is_object() && !n.is_array() => h.contains(n),
        (h, n) => h == n,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn containment_is_jsonbs() {
        let hay = json!({"user": {"name": "ann", "tags": ["a", "b"]}, "n": 1});
        assert!(contains(&hay, &json!({"user": {"name": "ann"}})));
        assert!(contains(&hay, &json!({"user": {"tags": ["b"]}})));
        assert!(!contains(&hay, &json!({"user": {"tags": ["c"]}})));
        assert!(!contains(&hay, &json!({"n": 2})));
        assert!(contains(&json!([1, 2]), &json!([2])));
    }

    #[test]
    fn text_matches_the_id_the_name_or_a_value_ignoring_case() {
        let needle = Needle::parse("Ann").unwrap();
        assert!(needle.matches("1", "x", r#"{"u":["ANNE"]}"#));
        assert!(needle.matches("1", "for-ann", "{}"));
        assert!(Needle::parse("Ann").unwrap().matches("Ann", "x", "{}"));
        assert!(
            !needle.matches("1", "x", r#"{"ann":1}"#),
            "a key is not a value"
        );
        assert!(!needle.matches("1", "x", "not json"));
        assert!(
            Needle::parse("12").unwrap().folded().is_some(),
            "a number is text"
        );
        assert!(
            Needle::parse("true")
                .unwrap()
                .matches("1", "x", r#"{"b":true}"#)
        );
        assert!(
            !Needle::parse("null")
                .unwrap()
                .matches("1", "x", r#"{"b":null}"#)
        );
    }
}
