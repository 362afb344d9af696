//! Large values (job data, return values): cut at 1 KiB unless `--full`, with their size.

use serde_json::{Value, json};

/// Values longer than this (bytes of their JSON text) are cut.
pub(crate) const CUT: usize = 1024;

/// The first `max` bytes of `text`, at a character boundary.
pub(crate) fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Stored JSON text as a JSON value for output: parsed, or a marker
/// `{"truncated": true, "size": N, "preview": "<first 1 KiB>"}` when longer than [`CUT`]
/// and not `full`. Text that is not JSON (written by another tool) stays a string.
pub(crate) fn json_of(text: &str, full: bool) -> Value {
    if !full && text.len() > CUT {
        return json!({"truncated": true, "size": text.len(), "preview": head(text, CUT)});
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// Stored text for a person: whole, or its first `max` bytes and its size.
pub(crate) fn text_of(text: &str, max: usize, full: bool) -> String {
    if full || text.len() <= max {
        return text.to_owned();
    }
    format!(
        "{}… ({} bytes; --full shows all)",
        head(text, max),
        text.len()
    )
}

/// A value [`json_of`] made, for a table cell of at most `max` bytes.
pub(crate) fn cell(value: &Value, max: usize) -> String {
    if value["truncated"] == true {
        let preview = value["preview"].as_str().unwrap_or_default();
        let size = value["size"].as_u64().unwrap_or(0);
        return format!("{}… ({size} bytes)", head(preview, max));
    }
    text_of(&value.to_string(), max, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_with_their_size_and_short_ones_parsed() {
        let big = format!("\"{}\"", "é".repeat(600));
        let v = json_of(&big, false);
        assert_eq!(v["truncated"], true);
        assert_eq!(v["size"], big.len());
        assert!(v["preview"].as_str().is_some_and(|p| p.len() <= CUT));
        assert_eq!(json_of(&big, true), Value::String("é".repeat(600)));
        assert_eq!(json_of("{\"a\":1}", false), json!({"a": 1}));
        assert_eq!(json_of("not json", false), json!("not json"));
        assert!(
            text_of(&big, 10, false).ends_with(&format!("({} bytes; --full shows all)", big.len()))
        );
    }
}
