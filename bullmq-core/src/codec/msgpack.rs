//! msgpack output byte-identical to msgpackr's, as Node.js BullMQ configures it.
//!
//! `rmp` writes every scalar the same way msgpackr does; the one difference is the map header:
//! msgpackr (with `useRecords: false`) always writes a map16 header (`0xde` + length), even for
//! small maps, where plain msgpack writers choose a fixmap. Numbers follow msgpackr's rule too
//! (see [`super::wire`]).

use rmp::encode::{self, ValueWriteError};

use super::CodecError;
use super::wire::{WireMap, WireValue};

const MAP16: u8 = 0xde;
/// The fixstr marker: `0xa0 | length`, for a string of at most [`FIXSTR_MAX`] bytes.
const FIXSTR: u8 = 0xa0;
const FIXSTR_MAX: usize = 31;

type Write = Result<(), ValueWriteError>;

fn number(out: &mut Vec<u8>, value: f64) -> Write {
    let integral = value.fract() == 0.0;
    if integral && (-2_147_483_648.0..4_294_967_296.0).contains(&value) {
        // In range, so the conversion is exact.
        #[allow(clippy::cast_possible_truncation)]
        let int = value as i64;
        if int >= 0 {
            encode::write_uint(out, int.unsigned_abs())?;
        } else {
            encode::write_sint(out, int)?;
        }
        Ok(())
    } else {
        encode::write_f64(out, value)
    }
}

/// Writes `s` as `encode::write_str` does; a short one (every map key, most values) straight
/// into the buffer, without `rmp`'s generic writer: it is most of a packed options map's cost.
fn str(out: &mut Vec<u8>, s: &str) -> Write {
    match u8::try_from(s.len()) {
        Ok(len) if usize::from(len) <= FIXSTR_MAX => {
            out.push(FIXSTR | len);
            out.extend_from_slice(s.as_bytes());
            Ok(())
        }
        _ => encode::write_str(out, s),
    }
}

pub(crate) fn value(out: &mut Vec<u8>, v: &WireValue<'_>) -> Write {
    match v {
        WireValue::Bool(b) => {
            encode::write_bool(out, *b).map_err(ValueWriteError::InvalidMarkerWrite)
        }
        #[allow(clippy::cast_precision_loss)]
        WireValue::UInt(n) => number(out, *n as f64),
        #[allow(clippy::cast_precision_loss)]
        WireValue::Int(n) => number(out, *n as f64),
        WireValue::Float(f) => number(out, *f),
        WireValue::Str(s) => str(out, s),
        WireValue::Array(items) => {
            let len = u32::try_from(items.len()).unwrap_or(u32::MAX);
            encode::write_array_len(out, len)?;
            items.iter().try_for_each(|item| value(out, item))
        }
        WireValue::Map(m) => map(out, m),
        WireValue::Null | WireValue::Undefined => {
            encode::write_nil(out).map_err(ValueWriteError::InvalidMarkerWrite)
        }
    }
}

pub(crate) fn map(out: &mut Vec<u8>, m: &WireMap<'_>) -> Write {
    // msgpackr refuses objects too large for a map16 header; so do we, rather than drop entries.
    let len = u16::try_from(m.0.len()).map_err(|_| {
        ValueWriteError::InvalidDataWrite(std::io::Error::other(format!(
            "a map of {} entries is more than msgpackr's 65535",
            m.0.len()
        )))
    })?;
    out.push(MAP16);
    out.extend_from_slice(&len.to_be_bytes());
    for (k, v) in &m.0 {
        str(out, k)?;
        value(out, v)?;
    }
    Ok(())
}

/// Packs a value as msgpackr (as Node.js BullMQ configures it) would, naming what it is in
/// the error.
pub fn pack_msgpack(what: &'static str, v: &WireValue<'_>) -> Result<Vec<u8>, CodecError> {
    // Room for the worker's options (`moveToFinished`'s take some 150 bytes), packed per job.
    let mut out = Vec::with_capacity(256);
    value(&mut out, v).map_err(|e| CodecError::Encode {
        what,
        reason: e.to_string(),
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The short-string path writes what `rmp` writes, on both sides of the fixstr limit.
    #[test]
    fn strings_are_packed_as_rmp_packs_them() {
        for len in [0, 1, FIXSTR_MAX, FIXSTR_MAX + 1, 255, 256, 70_000] {
            let s = "é".repeat(len / 2) + &"x".repeat(len % 2);
            let mut ours = Vec::new();
            str(&mut ours, &s).expect("a write to a Vec");
            let mut theirs = Vec::new();
            encode::write_str(&mut theirs, &s).expect("a write to a Vec");
            assert_eq!(ours, theirs, "{} bytes", s.len());
        }
    }
}
