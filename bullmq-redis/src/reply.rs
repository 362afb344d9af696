//! Decoding script and command replies into domain types: the one place that reads
//! `redis::Value`.

use bullmq_core::Job;
use bullmq_core::job::JobDecodeError;
use redis::Value;

use crate::error::unexpected;

/// Text of a string reply (bulk or simple); `None` for nil.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An integer reply, or a string holding one (Lua numbers can come back either way).
pub(crate) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(n) => Some(*n),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        Value::SimpleString(s) => s.trim().parse().ok(),
        Value::Double(d) if d.fract() == 0.0 =>
        {
            #[allow(clippy::cast_possible_truncation)]
            Some(*d as i64)
        }
        _ => None,
    }
}

/// An integer reply, or an error naming what was being read.
pub(crate) fn expect_int(context: &'static str, v: &Value) -> bullmq_core::Result<i64> {
    int(v).ok_or_else(|| unexpected(context, v))
}

/// The items of an array reply (nil reads as empty).
pub(crate) fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) | Value::Set(items) => items,
        _ => &[],
    }
}

/// A flat `[field, value, field, value, …]` reply (what `HGETALL` and the scripts' `HGETALL`
/// return) as pairs of UTF-8 strings; `Err` names the field that is not UTF-8.
pub(crate) fn field_pairs(id: &str, v: &Value) -> Result<Vec<(String, String)>, JobDecodeError> {
    let pairs: Vec<(&Value, &Value)> = match v {
        Value::Map(map) => map.iter().map(|(k, v)| (k, v)).collect(),
        other => items(other)
            .chunks_exact(2)
            .map(|kv| (&kv[0], &kv[1]))
            .collect(),
    };
    pairs
        .into_iter()
        .map(|(k, v)| {
            let key = text(k).unwrap_or_default();
            let value = match v {
                Value::BulkString(b) => {
                    String::from_utf8(b.clone()).map_err(|_| JobDecodeError {
                        job_id: id.to_owned(),
                        field: "(hash)",
                        reason: format!("field {key:?} is not UTF-8"),
                    })?
                }
                other => text(other).unwrap_or_default(),
            };
            Ok((key, value))
        })
        .collect()
}

/// A job from its hash fields; `None` when the hash is empty (no such job).
pub(crate) fn job(id: &str, v: &Value) -> Option<Result<Job, JobDecodeError>> {
    match field_pairs(id, v) {
        Ok(pairs) if pairs.is_empty() => None,
        Ok(pairs) => Some(Job::from_hash(id, pairs)),
        Err(e) => Some(Err(e)),
    }
}
