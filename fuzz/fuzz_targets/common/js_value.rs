//! JSON values as JavaScript sees them: a number is its double, so `0`, `0.0` and `-0` are one
//! number (`JSON.stringify` writes each as `0`) and a whole float is the integer. Rust's
//! `serde_json::Value` tells them apart; the round-trip properties must not.

use serde_json::Value;

/// `value` with every number as the double JavaScript holds: a whole one within 2^53 as an
/// integer (`-0` as `0`), any other as a float (an integer past 2^53 rounded, as msgpack
/// carries it).
pub fn normalize(value: &mut Value) {
    match value {
        Value::Number(n) => {
            let Some(f) = n.as_f64() else {
                return;
            };
            if f.fract() == 0.0 && f.abs() <= 9.007_199_254_740_992e15 {
                #[allow(clippy::cast_possible_truncation)]
                let int = f as i64;
                *value = Value::from(int);
            } else if let Some(float) = serde_json::Number::from_f64(f) {
                *value = Value::Number(float);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize),
        Value::Object(map) => map.values_mut().for_each(normalize),
        _ => {}
    }
}

/// The long name of an option Node.js stores under a short key (as the library maps them).
#[allow(dead_code)]
pub fn long_key(key: &str) -> &str {
    match key {
        "de" => "deduplication",
        "fpof" => "failParentOnFailure",
        "cpof" => "continueParentOnFailure",
        "idof" => "ignoreDependencyOnFailure",
        "kl" => "keepLogs",
        "rdof" => "removeDependencyOnFailure",
        other => other,
    }
}

/// Equal as JavaScript values: numbers by their double, an object's keys in any order.
#[allow(dead_code)]
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}
