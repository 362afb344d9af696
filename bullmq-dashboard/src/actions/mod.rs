//! The actions: POST only, each authorized (404 when hidden, 403 when read-only), then
//! CSRF-checked (403), then run, logged as a `tracing` event, and answered with a 303 back
//! to a page.

pub(crate) mod bulk;
pub(crate) mod job;
pub(crate) mod queue;
pub(crate) mod scheduler;
pub(crate) mod selected;

use std::collections::HashMap;

use crate::csrf;
use crate::error::DashboardError;
use crate::pages::{Opened, open};
use crate::request::Ctx;
use crate::state::Inner;

/// An action's form fields.
pub(crate) type Fields = HashMap<String, String>;

/// Opens `queue` for an action: it must be visible (else 404), writable (else 403), and the
/// form's CSRF token must match the browser's cookie (else 403).
pub(crate) async fn guard<'a>(
    inner: &'a Inner,
    ctx: &Ctx,
    connection: &str,
    queue: &str,
    fields: &Fields,
) -> Result<Opened<'a>, DashboardError> {
    let opened = open(inner, ctx, connection, queue).await?;
    if !opened.access.can_act() {
        tracing::warn!(target: "bullmq_dashboard", connection, queue, "action refused: read-only");
        return Err(DashboardError::ReadOnly {
            connection: opened.conn.name.clone(),
            queue: opened.name.as_str().to_owned(),
        });
    }
    if let Err(refusal) = inner.csrf.verify(
        ctx.nonce.as_deref(),
        fields.get(csrf::FIELD).map(String::as_str),
    ) {
        tracing::warn!(target: "bullmq_dashboard", connection, queue, %refusal, "action refused: CSRF");
        return Err(refusal.into());
    }
    Ok(opened)
}

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
