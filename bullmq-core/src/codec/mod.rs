//! The stored shapes Node.js BullMQ 6 reads and writes and both stores share: job options
//! (as JSON in either key style, and as the msgpack Node.js sends), the job hash, the names
//! of job types. Each backend owns how it talks to its server: the `ARGV` layouts of the Lua
//! scripts live in `bullmq-redis`, the SQL parameters in `bullmq-postgres`. Public for
//! backends; the `bullmq` facade does not re-export this module.
//!
//! # Job options
//!
//! On Redis, `queue.add` packs the options with msgpack as script argument `ARGV[3]`; the Lua
//! script unpacks them and stores `cjson.encode(opts)` as the job hash's `opts` field. Six
//! options travel under short keys (`de`, `fpof`, `cpof`, `idof`, `kl`, `rdof`) and telemetry
//! is flattened to `tm`/`omc` ([`KeyStyle::Short`]). PostgreSQL stores `JSON.stringify(opts)`
//! with the long names ([`KeyStyle::Long`]).
//!
//! ```
//! use std::time::Duration;
//! use bullmq_core::codec::{self, KeyStyle};
//! use bullmq_core::JobOptions;
//! use bullmq_core::options::Deduplication;
//!
//! let opts = JobOptions::new()
//!     .delay(Duration::from_millis(500))
//!     .keep_logs(10)
//!     .deduplication(Deduplication::new("d1"))
//!     .with_node_defaults();
//! let json = codec::options_to_json(&opts, KeyStyle::Short);
//! assert_eq!(json, r#"{"attempts":0,"delay":500,"kl":10,"de":{"id":"d1"}}"#);
//! let back = codec::options_from_json(&json)?;
//! assert_eq!(back.options, opts);
//! assert!(back.invalid.is_empty());
//! # Ok::<(), bullmq_core::codec::CodecError>(())
//! ```
//!
//! ## How the bytes match msgpackr's, and where they cannot
//!
//! `tests/interop/codec_golden.rs` runs Node.js BullMQ 6.7.6 on 74 option sets and checks that our
//! bytes are msgpackr's, byte for byte, and that Redis stores them as the same JSON. What makes
//! that hold, and its limits:
//!
//! - **Map headers.** msgpackr writes every object with a map16 header (`0xde`), even small
//!   ones where plain msgpack writers use a fixmap; so do we.
//! - **Numbers.** msgpackr writes a number as a msgpack integer only when it is an integer from
//!   -2^31 to 2^32-1, and as a float64 otherwise (2^32, 1.5, -2^31-1, 13-digit timestamps); so
//!   do we. A `u64` above 2^53 is rounded to the nearest double on the way, exactly as it is
//!   in JavaScript, where it could not be held exactly to begin with.
//! - **Key order.** msgpackr follows the JavaScript object's insertion order: `attempts` first
//!   (Node's `Job` constructor puts its default there), then the order the caller wrote. A typed
//!   struct has no such order; we write `attempts, jobId, timestamp, priority, delay, backoff,
//!   lifo, removeOnComplete, removeOnFail, keepLogs, stackTraceLimit, sizeLimit, parent, fpof,
//!   cpof, idof, rdof, de, tm, omc, repeat, prevMillis`, then unknown keys. Options a Node.js
//!   caller wrote in another order pack to the same entries in another order; the scripts read
//!   them by key, so nothing changes but the bytes. Options we read and could not type (a
//!   negative `attempts`, say) are written back in their own slot, not at the end.
//! - **What Redis stores.** The Lua scripts store `cjson.encode(cmsgpack.unpack(opts))`, which
//!   writes numbers with 14 significant digits (`1234567890123456` becomes
//!   `1.2345678901235e+15`) and empty arrays as `{}`, for both runtimes alike. The decoder
//!   accepts whole floats for integer options, as Node's `JSON.parse` does.
//! - **Durations** are whole milliseconds (seconds for `KeepJobs` age) when they are whole, and
//!   fractional JavaScript numbers otherwise.

mod entries;
pub(crate) mod hash_fields;
mod job_type;
mod keys;
mod msgpack;
mod options;
mod wire;

pub use hash_fields::{HashRepair, hash_repairs};
pub use job_type::job_type_arg;
pub use keys::KeyStyle;
pub use msgpack::pack_msgpack;
pub use options::{DecodedOptions, ParentAt};
pub(crate) use options::{written_order, written_repeat_order};
pub use wire::{WireMap, WireValue};

use crate::options::JobOptions;

/// A value that could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// Stored options are not a JSON object.
    #[error("job options are not a JSON object: {0}")]
    OptionsNotJson(String),
    /// Packed options are not a msgpack map.
    #[error("job options are not a msgpack map: {0}")]
    OptionsNotMsgpack(String),
    /// A value could not be serialized.
    #[error("could not encode {what}: {reason}")]
    Encode {
        /// What was being encoded.
        what: &'static str,
        /// Why it failed.
        reason: String,
    },
}

/// Packs options as msgpack, the way Node.js BullMQ passes them to its Lua scripts.
pub fn options_to_msgpack(opts: &JobOptions) -> Result<Vec<u8>, CodecError> {
    options_to_msgpack_with(opts, ParentAt::InOrder)
}

/// [`options_to_msgpack`] with `parent` placed as `parent_at` says (`Last` for a flow's
/// nodes, as Node's `FlowProducer` sends them).
pub fn options_to_msgpack_with(
    opts: &JobOptions,
    parent_at: ParentAt,
) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::with_capacity(64);
    msgpack::map(
        &mut out,
        &options::to_wire(opts, KeyStyle::Short, parent_at),
    )
    .map_err(|e| CodecError::Encode {
        what: "job options",
        reason: e.to_string(),
    })?;
    Ok(out)
}

/// Writes options as JSON in the given key style.
#[must_use]
pub fn options_to_json(opts: &JobOptions, style: KeyStyle) -> String {
    // Serializing an in-memory tree of strings, numbers and maps into a String cannot fail.
    crate::json::to_string(&options::to_wire(opts, style, ParentAt::InOrder)).unwrap_or_default()
}

/// Writes options as a JSON value in the given key style.
#[must_use]
pub fn options_to_value(opts: &JobOptions, style: KeyStyle) -> serde_json::Value {
    serde_json::to_value(options::to_wire(opts, style, ParentAt::InOrder)).unwrap_or_default()
}

/// Reads options stored as JSON by any runtime, in either key style.
pub fn options_from_json(json: &str) -> Result<DecodedOptions, CodecError> {
    let not_json = |e: serde_json::Error| CodecError::OptionsNotJson(e.to_string());
    let entries::Entries(entries) = serde_json::from_str(json).map_err(not_json)?;
    let Some(entries) = entries else {
        return Err(CodecError::OptionsNotJson(format!("found {}", json.trim())));
    };
    let mut out = DecodedOptions::default();
    for (key, raw) in options::last_value_wins(entries) {
        let value: serde_json::Value = serde_json::from_str(raw.get()).map_err(not_json)?;
        options::decode_entry(&mut out, &key, &value);
    }
    Ok(out)
}

/// Reads options from a parsed JSON value.
pub fn options_from_value(value: &serde_json::Value) -> Result<DecodedOptions, CodecError> {
    match value {
        serde_json::Value::Object(map) => Ok(options::from_map(map)),
        // cjson stores an empty table as `{}` but some writers store `[]` for no options.
        serde_json::Value::Array(items) if items.is_empty() => Ok(DecodedOptions::default()),
        other => Err(CodecError::OptionsNotJson(format!("found {other}"))),
    }
}

/// Reads msgpack-packed options (what a Node.js producer sends to the scripts).
pub fn options_from_msgpack(bytes: &[u8]) -> Result<DecodedOptions, CodecError> {
    let mut value: serde_json::Value =
        rmp_serde::from_slice(bytes).map_err(|e| CodecError::OptionsNotMsgpack(e.to_string()))?;
    whole_floats_to_integers(&mut value);
    options_from_value(&value).map_err(|_| CodecError::OptionsNotMsgpack("not a map".to_owned()))
}

/// msgpackr packs integers outside 32 bits as float64; JavaScript cannot tell them apart from
/// integers, so neither do we: whole floats up to 2^53 become JSON integers again.
fn whole_floats_to_integers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) => {
            let whole =
                |f: &f64| n.is_f64() && f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0;
            if let Some(f) = n.as_f64().filter(whole) {
                // Whole and within 2^53, so the conversion is exact.
                #[allow(clippy::cast_possible_truncation)]
                let int = f as i64;
                *value = Value::from(int);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_floats_to_integers),
        Value::Object(map) => map.values_mut().for_each(whole_floats_to_integers),
        _ => {}
    }
}
