//! Writing results on stdout: tables for people, JSON for scripts.
//!
//! `-o json` writes one document (an array for a list), `-o jsonl` one compact object per
//! line; the shapes are documented in docs/guides/cli.md and kept stable.

use std::io::Write as _;

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::Value;

use crate::cli::Format;
use crate::fail::Failure;

/// A table with a header, fitted to the terminal's width when stdout is one.
pub(crate) fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_HORIZONTAL_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    table
}

/// Writes `text` and a newline on stdout; a closed pipe (`| head`) ends quietly.
pub(crate) fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::failed(format!(
            "cannot write the output on stdout: {e}; check where stdout goes"
        ))),
    }
}

/// Writes a list: a table in text, an array in json, one object a line in jsonl.
pub(crate) fn list(
    format: Format,
    items: &[Value],
    text: impl FnOnce() -> String,
) -> Result<(), Failure> {
    match format {
        Format::Text => print(&text()),
        Format::Json => print(&pretty(&Value::Array(items.to_vec()))),
        Format::Jsonl => {
            for item in items {
                print(&item.to_string())?;
            }
            Ok(())
        }
    }
}

/// Writes one object: `text()` in text, the object in json (pretty) or jsonl (one line).
pub(crate) fn one(
    format: Format,
    item: &Value,
    text: impl FnOnce() -> String,
) -> Result<(), Failure> {
    match format {
        Format::Text => print(&text()),
        Format::Json => print(&pretty(item)),
        Format::Jsonl => print(&item.to_string()),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// A Unix-ms time as RFC 3339 (UTC), or `-` for none.
pub(crate) fn time(ms: Option<u64>) -> String {
    ms.filter(|ms| *ms > 0)
        .and_then(|ms| i64::try_from(ms).ok())
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(
            || "-".to_owned(),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        )
}
