//! The calls of `extendLock` and `extendLocks`, with the token and job id lists the latter
//! takes packed byte-identical to what Node.js BullMQ sends.

use std::time::Duration;

use bullmq_core::backend::LockToken;
use bullmq_core::codec::{CodecError, WireValue, pack_msgpack};
use bullmq_core::{JobId, Result};

use super::ms;
use crate::keys::QueueKeys;
use crate::script::ScriptCall;

/// `extendLock`: renew `token`'s lock on `job_id` for `duration`.
pub(crate) fn extend_lock(
    k: &QueueKeys,
    job_id: &JobId,
    token: &LockToken,
    duration: Duration,
) -> ScriptCall {
    ScriptCall::default()
        .key(k.job_key(job_id, ":lock"))
        .key(&k.stalled)
        .arg(token.as_str())
        .arg(ms(duration))
        .arg(job_id.as_bytes())
}

/// `extendLocks`: renew each `(job id, token)` lock for `duration`.
pub(crate) fn extend_locks(
    k: &QueueKeys,
    locks: &[(JobId, LockToken)],
    duration: Duration,
) -> Result<ScriptCall> {
    let tokens = pack_strings(locks.iter().map(|(_, t)| t.as_str()))?;
    let ids = pack_ids(locks.iter().map(|(id, _)| id))?;
    Ok(ScriptCall::default()
        .key(&k.stalled)
        .arg(&k.job_prefix)
        .arg(tokens)
        .arg(ids)
        .arg(ms(duration)))
}

/// Packs a list of strings as a msgpack array.
pub(crate) fn pack_strings<'a>(
    items: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<u8>, CodecError> {
    let items = items.into_iter().map(WireValue::text).collect();
    pack_msgpack("string list", &WireValue::Array(items))
}

/// Packs job ids as a msgpack array of strings, each with its exact bytes: an id another
/// runtime wrote may not be UTF-8, and the script must be sent the key it was fetched under.
/// The same bytes as [`pack_strings`] for ids that are text.
pub(crate) fn pack_ids<'a>(
    ids: impl IntoIterator<Item = &'a bullmq_core::JobId>,
) -> Result<Vec<u8>, CodecError> {
    let ids: Vec<_> = ids.into_iter().collect();
    if ids.iter().all(|id| id.is_utf8()) {
        return pack_strings(ids.iter().map(|id| id.as_str()));
    }
    // msgpack's smallest headers, as msgpackr writes them.
    fn header(out: &mut Vec<u8>, len: usize, fix: (u8, usize), sizes: [u8; 3]) {
        if len < fix.1 {
            // Below the fixed form's bound, so it fits the low bits.
            #[allow(clippy::cast_possible_truncation)]
            out.push(fix.0 | len as u8);
        } else if let (Some(tag), Ok(n)) = (sizes.first().filter(|t| **t != 0), u8::try_from(len)) {
            out.extend([*tag, n]);
        } else if let Ok(n) = u16::try_from(len) {
            out.push(sizes[1]);
            out.extend(n.to_be_bytes());
        } else {
            out.push(sizes[2]);
            out.extend(u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
        }
    }
    let mut out = Vec::new();
    header(&mut out, ids.len(), (0x90, 16), [0, 0xdc, 0xdd]);
    for id in ids {
        let bytes = id.as_bytes();
        header(&mut out, bytes.len(), (0xa0, 32), [0xd9, 0xda, 0xdb]);
        out.extend_from_slice(bytes);
    }
    Ok(out)
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

    #[test]
    fn ids_keep_their_bytes() {
        let hex = |b: Vec<u8>| b.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let text = bullmq_core::JobId::from("bb");
        let raw = bullmq_core::JobId::from_bytes(b"\xff");
        assert_eq!(hex(pack_ids([&text]).unwrap()), "91a26262");
        assert_eq!(hex(pack_ids([&text, &raw]).unwrap()), "92a26262a1ff");
    }
}
