//! Where one RESP2 reply ends in a read buffer, and taking it out.
//!
//! Our connections read replies into their own buffers and turn each complete one into a value
//! ([`resp`], or redis-rs's parser for error replies, whose codes it knows); finding where a
//! reply ends is a walk over type bytes and lengths, never over payload bytes, since RESP2 is
//! length-prefixed.

use redis::{ErrorKind, RedisError, Value};

use super::resp;

/// The length of the first complete reply at the start of `buf`, or `None` while more bytes
/// are needed.
pub(super) fn reply_len(buf: &[u8]) -> Result<Option<usize>, RedisError> {
    let mut pos = 0;
    // Replies still to walk: arrays add their elements.
    let mut pending: usize = 1;
    while pending > 0 {
        pending -= 1;
        let Some(&kind) = buf.get(pos) else {
            return Ok(None);
        };
        let Some(line_end) = find_crlf(&buf[pos + 1..]) else {
            return Ok(None);
        };
        let line = &buf[pos + 1..pos + 1 + line_end];
        let after_line = pos + 1 + line_end + 2;
        pos = match kind {
            b'+' | b'-' | b':' => after_line,
            b'$' => match length(line)? {
                None => after_line,
                Some(n) => {
                    let end = after_line
                        .checked_add(n)
                        .and_then(|end| end.checked_add(2))
                        .ok_or_else(|| invalid(format!("bulk length {n} too large")))?;
                    if buf.len() < end {
                        return Ok(None);
                    }
                    end
                }
            },
            b'*' => {
                if let Some(n) = length(line)? {
                    pending = pending.saturating_add(n);
                }
                after_line
            }
            other => return Err(invalid(format!("unknown reply type byte 0x{other:02x}"))),
        };
    }
    Ok(Some(pos))
}

/// The first complete reply at the start of `buf` and its length, or `None` while more bytes
/// are needed. Server errors stay values ([`Value::ServerError`]), as redis-rs's callers
/// expect.
pub(super) fn take_reply(buf: &[u8]) -> Result<Option<(Value, usize)>, RedisError> {
    let Some(len) = reply_len(buf)? else {
        return Ok(None);
    };
    let reply = &buf[..len];
    let value = match resp::parse(reply) {
        Some(value) => value,
        None => redis::parse_redis_value(reply)?,
    };
    Ok(Some((value, len)))
}

/// The offset of the first `\r\n` in `bytes`.
fn find_crlf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|w| w == b"\r\n")
}

/// A bulk or array length: `None` for the null reply (`-1`).
fn length(line: &[u8]) -> Result<Option<usize>, RedisError> {
    let text = std::str::from_utf8(line).map_err(|_| invalid("a length that is not text"))?;
    if text == "-1" {
        return Ok(None);
    }
    text.parse::<usize>()
        .map(Some)
        .map_err(|_| invalid(format!("invalid length {text:?}")))
}

fn invalid(detail: impl Into<String>) -> RedisError {
    RedisError::from((
        ErrorKind::Parse,
        "invalid reply from the server",
        detail.into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::reply_len;

    fn len(bytes: &[u8]) -> Option<usize> {
        reply_len(bytes).expect("valid RESP2")
    }

    #[test]
    fn simple_replies_end_after_their_line() {
        assert_eq!(len(b"+OK\r\n"), Some(5));
        assert_eq!(len(b"-ERR no\r\n+OK\r\n"), Some(9));
        assert_eq!(len(b":42\r\n"), Some(5));
        assert_eq!(len(b":42\r"), None);
        assert_eq!(len(b""), None);
    }

    #[test]
    fn bulk_strings_skip_their_payload_even_when_it_holds_crlf() {
        assert_eq!(len(b"$4\r\na\r\nb\r\n"), Some(10));
        assert_eq!(len(b"$4\r\na\r\nb"), None);
        assert_eq!(len(b"$-1\r\n"), Some(5));
        assert_eq!(len(b"$0\r\n\r\n"), Some(6));
    }

    #[test]
    fn arrays_nest_and_wait_for_every_element() {
        let reply = b"*2\r\n*2\r\n:1\r\n$1\r\nx\r\n$-1\r\n";
        assert_eq!(len(reply), Some(reply.len()));
        for cut in 0..reply.len() {
            assert_eq!(len(&reply[..cut]), None, "cut at {cut}");
        }
        assert_eq!(len(b"*0\r\n"), Some(4));
        assert_eq!(len(b"*-1\r\n"), Some(5));
    }

    #[test]
    fn garbage_is_a_parse_error_not_a_panic() {
        assert!(reply_len(b"?what\r\n").is_err());
        assert!(reply_len(b"$x\r\n").is_err());
        assert!(reply_len(b"*-5\r\n").is_err());
    }
}
