//! Comparing what job schedulers leave in Redis across the two runtimes.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// Ids of a sorted set of the queue (`{queue_key}:{set}`), in score order.
pub async fn members(queue_key: &str, set: &str) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(format!("{queue_key}:{set}"))
        .arg(0)
        .arg(-1)
        .query_async(&mut super::redis().await)
        .await
        .expect("ZRANGE")
}

/// `value` with every object's keys in sorted order.
pub fn canonical(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// An iteration's hash without clock readings: `timestamp`, `processedOn`, `finishedOn`,
/// `delay` (the time left until its run when it was added), and in `opts` the same
/// `timestamp` and `delay`. `opts` is compared as JSON, not as text: the store writes it with
/// Lua's cjson, whose key order follows the order the worker packed the keys in, and the Rust
/// codec packs `repeat` in its own fixed order, not in the order of the job it came from as
/// Node.js does.
pub fn without_clock(mut job: BTreeMap<String, String>) -> BTreeMap<String, String> {
    for field in ["timestamp", "processedOn", "finishedOn", "delay"] {
        if let Some(v) = job.get_mut(field) {
            *v = "<time>".to_owned();
        }
    }
    if let Some(opts) = job.get_mut("opts") {
        let mut parsed: serde_json::Map<String, Value> =
            serde_json::from_str(opts).expect("opts is a JSON object");
        for key in ["timestamp", "delay"] {
            if let Some(v) = parsed.get_mut(key) {
                *v = json!("<time>");
            }
        }
        *opts = serde_json::to_string(&canonical(Value::Object(parsed))).expect("JSON");
    }
    job
}
