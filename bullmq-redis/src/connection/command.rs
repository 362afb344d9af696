//! Writing a command straight into a connection's request buffer, in RESP2.
//!
//! redis-rs builds a `Cmd` (arguments copied into its buffer) and then packs it (copied
//! again); a script call on the worker's hot path has some twenty arguments and a job's
//! payload, so writing each argument once, where it is sent from, saves both copies and
//! their allocations.

/// Writes the command made of `parts` (name first) to `buf`.
pub(crate) fn write<'a, I>(buf: &mut Vec<u8>, parts: I)
where
    I: IntoIterator<Item = &'a [u8]>,
    I::IntoIter: Clone,
{
    let parts = parts.into_iter();
    let (count, bytes) = parts
        .clone()
        .fold((0, 0), |(n, b), part| (n + 1, b + part.len()));
    // Each part takes its bytes plus at most `$` + 20 digits + two CRLFs.
    buf.reserve(bytes + count * 25 + 25);
    header(buf, b'*', count);
    for part in parts {
        header(buf, b'$', part.len());
        buf.extend_from_slice(part);
        buf.extend_from_slice(b"\r\n");
    }
}

fn header(buf: &mut Vec<u8>, kind: u8, n: usize) {
    buf.push(kind);
    buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    buf.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::write;

    #[test]
    fn writes_what_redis_rs_packs() {
        let parts: [&[u8]; 4] = [b"EVALSHA", b"abc", b"", b"\r\n\x00bin"];
        let mut ours = Vec::new();
        write(&mut ours, parts);
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(&b"abc"[..]).arg(&b""[..]).arg(&b"\r\n\x00bin"[..]);
        assert_eq!(ours, cmd.get_packed_command());
    }
}
