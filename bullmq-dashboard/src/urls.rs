//! The dashboard's paths, below its mount point, with every part percent-encoded.

use std::fmt::Write as _;

/// `text` percent-encoded for a path segment or a query value (everything but RFC 3986's
/// unreserved characters).
pub(crate) fn enc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `path` below the mount point `base`; the overview (`/`) is the mount point itself, which
/// is where a router nested at `base` answers it.
pub(crate) fn below(base: &str, path: &str) -> String {
    if path == "/" && !base.is_empty() {
        base.to_owned()
    } else {
        format!("{base}{path}")
    }
}

/// A queue's page.
pub(crate) fn queue(connection: &str, queue: &str) -> String {
    format!("/c/{}/q/{}", enc(connection), enc(queue))
}

/// A page or action below a queue's page.
pub(crate) fn queue_sub(connection: &str, queue_name: &str, sub: &str) -> String {
    format!("{}/{sub}", queue(connection, queue_name))
}

/// A job's page.
pub(crate) fn job(connection: &str, queue_name: &str, id: &str) -> String {
    format!("{}/jobs/{}", queue(connection, queue_name), enc(id))
}

/// An action on a job.
pub(crate) fn job_action(connection: &str, queue_name: &str, id: &str, action: &str) -> String {
    format!("{}/{action}", job(connection, queue_name, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_encoded() {
        assert_eq!(enc("a b/c?d&é"), "a%20b%2Fc%3Fd%26%C3%A9");
        assert_eq!(job("main", "q 1", "7/8"), "/c/main/q/q%201/jobs/7%2F8");
        assert_eq!(below("/admin", "/"), "/admin");
        assert_eq!(below("", "/"), "/");
        assert_eq!(below("/admin", "/live"), "/admin/live");
    }
}
