//! `jsonb` parameters written as Node.js writes them.
//!
//! `jsonb` keeps a number's text scale (`1.0` stays `1.0`, `-0.0` stays `-0.0`), so a value
//! bound through sqlx's `Json` (plain `serde_json` text) would be stored, and read back by
//! Node.js, unlike what `JSON.stringify` sends. These parameters carry the JavaScript writer's
//! text instead.

use bullmq_core::Result;
use bullmq_core::codec::CodecError;
use serde::Serialize;
use serde_json::value::RawValue;
use sqlx::types::Json;

/// `value` as a `jsonb` parameter holding [`bullmq_core::json::to_string`]'s text; `what`
/// names it in the error when it cannot be serialized.
pub(crate) fn js_jsonb<T: Serialize + ?Sized>(
    what: &'static str,
    value: &T,
) -> Result<Json<Box<RawValue>>> {
    bullmq_core::json::to_string(value)
        .and_then(RawValue::from_string)
        .map(Json)
        .map_err(|e| {
            CodecError::Encode {
                what,
                reason: e.to_string(),
            }
            .into()
        })
}
