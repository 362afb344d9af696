//! The token and job id lists of `extendLocks`, byte-identical to what Node.js BullMQ sends.

use bullmq_core::codec::{CodecError, WireValue, pack_msgpack};

/// Packs a list of strings as a msgpack array.
pub(crate) fn pack_strings<'a>(
    items: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<u8>, CodecError> {
    let items = items.into_iter().map(WireValue::text).collect();
    pack_msgpack("string list", &WireValue::Array(items))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    //! Expected bytes were produced by msgpackr (as Node.js BullMQ configures it).

    use super::*;

    #[test]
    fn strings_match_msgpackr() {
        let hex = |b: Vec<u8>| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(pack_strings(["a", "bb"]).unwrap()), "92a161a26262");
        assert_eq!(hex(pack_strings([]).unwrap()), "90");
    }
}
