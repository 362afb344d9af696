//! Turning one complete RESP2 reply into a [`Value`], for the replies the scripts give.
//!
//! redis-rs's own parser is a general, resumable parser combinator; on the worker's hot path
//! (a whole job hash in every `moveToActive`/`moveToFinished` reply) it was about a sixth of
//! the client's CPU. [`frame::reply_len`](super::frame::reply_len) has already found where
//! the reply ends, so this reads it in one straight pass. Error replies (`-ERR …`, also
//! nested in a transaction's answer) are left to redis-rs's parser, which knows how to turn
//! their codes into its error kinds: [`parse`] answers `None` for them.

use redis::Value;

/// Arrays nested deeper than this are left to redis-rs's parser (no script nests them).
const MAX_DEPTH: usize = 32;

/// The value of the complete reply `frame`, or `None` when it holds an error reply, is nested
/// too deep, or is not what [`frame::reply_len`](super::frame::reply_len) accepted.
pub(super) fn parse(frame: &[u8]) -> Option<Value> {
    let mut cursor = Cursor {
        bytes: frame,
        pos: 0,
    };
    let value = cursor.value(0)?;
    (cursor.pos == frame.len()).then_some(value)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn value(&mut self, depth: usize) -> Option<Value> {
        let kind = *self.bytes.get(self.pos)?;
        self.pos += 1;
        let line = self.line()?;
        match kind {
            b'+' if line == b"OK" => Some(Value::Okay),
            b'+' => Some(Value::SimpleString(String::from_utf8(line.to_vec()).ok()?)),
            b':' => Some(Value::Int(std::str::from_utf8(line).ok()?.parse().ok()?)),
            b'$' => match length(line)? {
                None => Some(Value::Nil),
                Some(n) => {
                    let body = self.bytes.get(self.pos..self.pos.checked_add(n)?)?;
                    self.pos += n;
                    self.crlf()?;
                    Some(Value::BulkString(body.to_vec()))
                }
            },
            b'*' if depth < MAX_DEPTH => match length(line)? {
                None => Some(Value::Nil),
                Some(n) => {
                    // Every element takes at least 3 bytes: a hostile length cannot make
                    // this allocate more than the reply's size.
                    let mut items = Vec::with_capacity(n.min(self.bytes.len() / 3));
                    for _ in 0..n {
                        items.push(self.value(depth + 1)?);
                    }
                    Some(Value::Array(items))
                }
            },
            // `-`: an error reply; or an unknown type byte.
            _ => None,
        }
    }

    /// The bytes up to the next `\r\n`, which is skipped.
    fn line(&mut self) -> Option<&[u8]> {
        let rest = self.bytes.get(self.pos..)?;
        let end = rest.windows(2).position(|w| w == b"\r\n")?;
        self.pos += end + 2;
        Some(&rest[..end])
    }

    fn crlf(&mut self) -> Option<()> {
        (self.bytes.get(self.pos..self.pos + 2)? == b"\r\n").then(|| self.pos += 2)
    }
}

/// A bulk or array length; `Some(None)` for the null reply (`-1`).
fn length(line: &[u8]) -> Option<Option<usize>> {
    if line == b"-1" {
        return Some(None);
    }
    std::str::from_utf8(line).ok()?.parse().ok().map(Some)
}

#[cfg(test)]
mod tests {
    use redis::Value;

    use super::parse;

    /// Our parse agrees with redis-rs's on every reply it takes, and leaves the rest to it.
    fn agrees(frame: &[u8]) {
        let ours = parse(frame);
        let theirs = redis::parse_redis_value(frame).expect("valid RESP2");
        if let Some(ours) = ours {
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(frame));
        }
    }

    #[test]
    fn replies_read_as_redis_rs_reads_them() {
        for frame in [
            &b"+OK\r\n"[..],
            b"+QUEUED\r\n",
            b":-42\r\n",
            b"$5\r\nhe\r\no\r\n",
            b"$0\r\n\r\n",
            b"$-1\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"*3\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n+OK\r\n",
        ] {
            agrees(frame);
            assert!(parse(frame).is_some(), "{}", String::from_utf8_lossy(frame));
        }
    }

    #[test]
    fn error_replies_are_left_to_redis_rs() {
        assert_eq!(parse(b"-NOSCRIPT No matching script\r\n"), None);
        assert_eq!(parse(b"*2\r\n+OK\r\n-ERR nope\r\n"), None);
        agrees(b"*2\r\n+OK\r\n-ERR nope\r\n");
    }

    #[test]
    fn a_truncated_or_padded_frame_is_refused() {
        assert_eq!(parse(b"$5\r\nhello"), None);
        assert_eq!(parse(b":1\r\n:2\r\n"), None);
        assert_eq!(
            parse(b"*1\r\n$3\r\nabc\r\n"),
            Some(Value::Array(vec![Value::BulkString(b"abc".to_vec())]))
        );
    }
}
