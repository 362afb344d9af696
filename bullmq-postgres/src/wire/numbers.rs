//! Rust's unsigned counts and durations as the signed SQL types upstream's commands take.

use std::time::Duration;

/// A `u64` as SQL's `bigint`, saturating (no timestamp or count comes near the limit).
pub(crate) fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A duration as whole milliseconds, as SQL's `bigint` (saturating).
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A `u64` as SQL's `integer`, saturating.
pub(crate) fn to_i32(value: u64) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// An `i64` as SQL's `integer`, saturating at either end.
pub(crate) fn clamp_i32(value: i64) -> i32 {
    i32::try_from(value).unwrap_or(if value < 0 { i32::MIN } else { i32::MAX })
}
