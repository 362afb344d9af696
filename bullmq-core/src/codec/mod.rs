//! The wire shapes Node.js BullMQ 6 reads and writes: the only module that knows them.
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
//! ## Where our bytes can differ from Node's, and why it does not matter
//!
//! - **Key order.** msgpackr packs keys in the JavaScript object's insertion order, which is
//!   the order the caller wrote them in (after `attempts`, which the `Job` constructor puts
//!   first). A typed struct has no such order: we always write
//!   `attempts, jobId, timestamp, priority, delay, backoff, lifo, removeOnComplete,
//!   removeOnFail, keepLogs, stackTraceLimit, sizeLimit, parent, fpof, cpof, idof, rdof, de,
//!   tm, omc, repeat, prevMillis`, then unknown keys. Options written by Node in that order give
//!   identical bytes; in any other order the map holds the same entries, and the scripts read
//!   them by key.
//! - **Numbers.** We follow msgpackr: integers from -2^31 to 2^32-1 as msgpack integers,
//!   anything else (larger integers, fractions) as float64; so equal numbers give equal bytes.
//!   On the way into Redis, cjson then re-encodes every number with 14 significant digits
//!   (`1234567890123456` is stored as `1.2345678901235e+15`) for both runtimes alike; the
//!   decoder accepts such whole floats for integer options.
//! - **Empty arrays** are stored by cjson as `{}`; no typed option is an array, and unknown
//!   options are kept as they were read.
//! - **Durations** are whole milliseconds (seconds for `KeepJobs` age) when they are whole,
//!   and fractional JavaScript numbers otherwise.

pub(crate) mod hash_fields;
mod keys;
mod msgpack;
mod options;
mod wire;

pub use keys::KeyStyle;
pub use options::{DecodedOptions, InvalidOption};

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
    let mut out = Vec::with_capacity(64);
    msgpack::map(&mut out, &options::to_wire(opts, KeyStyle::Short)).map_err(|e| {
        CodecError::Encode {
            what: "job options",
            reason: e.to_string(),
        }
    })?;
    Ok(out)
}

/// Writes options as JSON in the given key style.
#[must_use]
pub fn options_to_json(opts: &JobOptions, style: KeyStyle) -> String {
    // Serializing an in-memory tree of strings, numbers and maps into a String cannot fail.
    serde_json::to_string(&options::to_wire(opts, style)).unwrap_or_default()
}

/// Writes options as a JSON value in the given key style.
#[must_use]
pub fn options_to_value(opts: &JobOptions, style: KeyStyle) -> serde_json::Value {
    serde_json::to_value(options::to_wire(opts, style)).unwrap_or_default()
}

/// Reads options stored as JSON by any runtime, in either key style.
pub fn options_from_json(json: &str) -> Result<DecodedOptions, CodecError> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| CodecError::OptionsNotJson(e.to_string()))?;
    options_from_value(&value)
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
    let value: serde_json::Value =
        rmp_serde::from_slice(bytes).map_err(|e| CodecError::OptionsNotMsgpack(e.to_string()))?;
    options_from_value(&value).map_err(|_| CodecError::OptionsNotMsgpack("not a map".to_owned()))
}
