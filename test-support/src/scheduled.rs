//! Comparing what job schedulers leave in Redis across the two runtimes.

use std::collections::BTreeMap;

use serde_json::Value;

/// Ids of a sorted set of the queue (`{queue_key}:{set}`), in score order.
pub async fn members(queue_key: &str, set: &str) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(format!("{queue_key}:{set}"))
        .arg(0)
        .arg(-1)
        .query_async(&mut crate::redis().await)
        .await
        .expect("ZRANGE")
}

/// Waits (up to `limit`) until queue `queue_key` has completed at least `count` iterations.
pub async fn until_completed(queue_key: &str, count: usize, limit: std::time::Duration) {
    crate::eventually(
        &format!("{queue_key} completed {count} iterations"),
        limit,
        || async { members(queue_key, "completed").await.len() >= count },
    )
    .await;
}

/// An iteration's hash without clock readings: `timestamp`, `processedOn`, `finishedOn`,
/// `delay` (the time left until its run when it was added), and in `opts` the same top-level
/// `timestamp` and `delay`. `opts` stays text otherwise: its bytes, key order included, are
/// what is compared.
pub fn without_clock(mut job: BTreeMap<String, String>) -> BTreeMap<String, String> {
    for field in ["timestamp", "processedOn", "finishedOn", "delay"] {
        if let Some(v) = job.get_mut(field) {
            *v = "<time>".to_owned();
        }
    }
    if let Some(opts) = job.get_mut("opts") {
        serde_json::from_str::<serde_json::Map<String, Value>>(opts).expect("opts is an object");
        *opts = top_level_numbers_masked(opts, &["timestamp", "delay"]);
    }
    job
}

/// `json` (an object) with the numbers of its top-level `keys` replaced by `<time>`, every
/// other byte kept.
fn top_level_numbers_masked(json: &str, keys: &[&str]) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut string = String::new();
    let mut last_key_masked = false;
    let mut chars = json.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
                last_key_masked = depth == 1 && keys.contains(&string.as_str());
            } else {
                string.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                string.clear();
            }
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ':' if last_key_masked => {
                while chars.peek().is_some_and(|n| "-+.eE0123456789".contains(*n)) {
                    chars.next();
                }
                out.push_str("<time>");
                last_key_masked = false;
            }
            ',' => last_key_masked = false,
            _ => {}
        }
    }
    out
}
