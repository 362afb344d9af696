//! The actions: POST only, each authorized (404 when hidden, 403 when read-only), then
//! CSRF-checked (403), then run, logged as a `tracing` event, and answered with a 303 back
//! to a page.

pub(crate) mod bulk;
pub(crate) mod job;
pub(crate) mod queue;
pub(crate) mod scheduler;
pub(crate) mod selected;

use std::collections::HashMap;

use crate::error::DashboardError;

/// An action's form fields.
pub(crate) type Fields = HashMap<String, String>;

/// A whole-number form field, `None` when empty.
pub(crate) fn number(
    fields: &Fields,
    field: &'static str,
    fix: &'static str,
) -> Result<Option<u64>, DashboardError> {
    match fields
        .get(field)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
    {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| DashboardError::bad(field, format!("{v:?} is not a whole number"), fix)),
    }
}

/// A JSON form field (`{}` when empty), refused with a 400 naming it when it is not JSON.
pub(crate) fn json_field(
    fields: &Fields,
    field: &'static str,
) -> Result<serde_json::Value, DashboardError> {
    let text = fields
        .get(field)
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .unwrap_or("{}");
    serde_json::from_str(text).map_err(|e| {
        DashboardError::bad(
            field,
            format!("not JSON: {e}"),
            "give a JSON value, e.g. {\"to\":\"a@b.c\"}",
        )
    })
}
