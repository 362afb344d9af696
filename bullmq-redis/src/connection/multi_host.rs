//! What the URLs naming several nodes share (`redis+cluster://`, `redis+sentinel://`): a
//! scheme of their own, the user information, a comma-separated `host:port` list, a path and
//! a query, and how a node's `host:port` is read and written back. Each kind reads its path
//! and query its own way; this is the one home of the host parsing both use.
//!
//! The URL is read as redis-rs reads a standalone one ([`bullmq_core::url_form`]): a raw `@`
//! in the password is read whole, a raw `?`, `#` or `/` (which would end the user
//! information) is refused with the advice to percent-encode it. A malformed URL's error
//! never quotes the URL: it names the part at fault by its place instead (`node 2`), so that
//! no part of a password can end up in a message or a log.

use bullmq_core::redact::user_info_end;

/// A multi-node URL taken apart; borrowed from the URL.
pub(super) struct MultiHostUrl<'a> {
    /// The scheme of each node's own URL: `redis` or `rediss`.
    pub(super) node_scheme: &'static str,
    /// `user:password@` (percent-encoded where a node URL needs it), or empty; never printed.
    pub(super) user_info: String,
    /// The nodes named, in order.
    pub(super) hosts: Vec<(String, u16)>,
    /// What follows the hosts' `/`, or empty.
    pub(super) path: &'a str,
    /// What follows `?`, or empty.
    pub(super) query: &'a str,
}

impl<'a> MultiHostUrl<'a> {
    /// `url` taken apart when its scheme is one of `schemes` (`(scheme, node scheme)` pairs),
    /// `Ok(None)` for any other URL, or why a host is not valid (never quoting the URL).
    /// A host without a port gets `default_port`.
    pub(super) fn split(
        url: &'a str,
        schemes: &[(&str, &'static str)],
        default_port: u16,
    ) -> Result<Option<Self>, String> {
        let Some((scheme, rest)) = url.split_once("://") else {
            return Ok(None);
        };
        let Some(&(_, node_scheme)) = schemes.iter().find(|(s, _)| *s == scheme) else {
            return Ok(None);
        };
        if let Some(problem) = bullmq_core::url_form::ambiguity(url) {
            return Err(problem.to_owned());
        }
        let user_info =
            user_info_end(rest).map_or_else(String::new, |at| encode_user_info(&rest[..at]));
        let parts = bullmq_core::url_form::split(url).ok_or("the URL has no `://`")?;
        let (hosts, path, query) = (
            parts.hosts,
            parts.path.strip_prefix('/').unwrap_or(parts.path),
            parts.query.unwrap_or(""),
        );
        let hosts = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .enumerate()
            .map(|(i, h)| {
                parse_host_port(h, default_port)
                    .map_err(|why| format!("node {} of the URL {why}", i + 1))
            })
            .collect::<Result<_, _>>()?;
        Ok(Some(Self {
            node_scheme,
            user_info,
            hosts,
            path,
            query,
        }))
    }
}

/// What the standalone URLs of a multi-node URL's nodes share: the scheme, the credentials and
/// the query. A node's URL is `<scheme>://<user info><host>:<port>/<path><query>`.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct NodeUrls {
    /// `redis` or `rediss`.
    pub(super) scheme: &'static str,
    /// `user:password@` or empty; never printed.
    user_info: String,
    /// `?…` or empty.
    query: String,
}

impl NodeUrls {
    /// Node URLs with `scheme`, `user_info` (`user:password@` or empty) and `query` (what
    /// follows `?`, or empty).
    pub(super) fn new(scheme: &'static str, user_info: String, query: &str) -> Self {
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        Self {
            scheme,
            user_info,
            query,
        }
    }

    /// The URL of the node at `host:port`, `path` (a database, or empty) after its `/`.
    pub(super) fn url(&self, host: &str, port: u16, path: &str) -> String {
        format!(
            "{}://{}{}:{port}/{path}{}",
            self.scheme,
            self.user_info,
            bracketed(host),
            self.query
        )
    }
}

/// `user:password` followed by `@`, with the characters that would end the user information
/// of a node's standalone URL early (`?`, `#`, `/`, `@`) percent-encoded; redis-rs decodes
/// them back.
pub(super) fn encode_user_info(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() + 1);
    for c in raw.chars() {
        match c {
            '?' => out.push_str("%3F"),
            '#' => out.push_str("%23"),
            '/' => out.push_str("%2F"),
            '@' => out.push_str("%40"),
            c => out.push(c),
        }
    }
    out.push('@');
    out
}

/// `text` percent-encoded for a URL's user information: everything but letters, digits and
/// `-._~`.
pub(super) fn encode_component(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// `host:port` (`default_port` when left out), `[v6]:port` too. The error says what is wrong
/// without quoting `text` (which may be part of a password, see
/// the module's documentation).
fn parse_host_port(text: &str, default_port: u16) -> Result<(String, u16), String> {
    let (host, port) = if let Some(v6) = text.strip_prefix('[') {
        let (host, rest) = v6
            .split_once(']')
            .ok_or("is not `host:port` (a `[` without its `]`)")?;
        (host, rest.strip_prefix(':'))
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let port = match port {
        Some(port) => port
            .parse()
            .map_err(|_| "has a port that is not a number")?,
        None => default_port,
    };
    if host.is_empty() {
        return Err("has no host".to_owned());
    }
    Ok((host.to_owned(), port))
}

/// `host`, in brackets when it is an IPv6 address.
pub(super) fn bracketed(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ClusterUrl, SentinelUrl};

    /// Passwords with a raw `@` (or percent-encoded specials) are read whole, as redis-rs
    /// reads a standalone URL; a raw `?`, `#` or `/` is refused with the advice to
    /// percent-encode it; no error says a word of the password.
    #[test]
    fn raw_at_is_kept_whole_raw_slash_query_hash_refused_never_echoed() {
        let whole = [
            ("S3@CR3T", "S3@CR3T"),
            ("S3:CR3T@h:x", "S3:CR3T@h:x"),
            ("S3@@CR3T", "S3@@CR3T"),
            ("S3%3F%2F%23%40CR3T", "S3?/#@CR3T"),
        ];
        for (written, password) in whole {
            let cluster = format!("redis+cluster://app:{written}@h1:7000,h2:7001");
            let url = ClusterUrl::parse(&cluster)
                .unwrap_or_else(|e| panic!("{password}: {e}"))
                .expect("a cluster URL");
            assert_eq!(
                url.seeds,
                vec![("h1".to_owned(), 7000), ("h2".to_owned(), 7001)],
                "{password}"
            );
            let node = redis::Client::open(url.node_url("h1", 7000)).expect("a node URL");
            let settings = node.get_connection_info().redis_settings();
            assert_eq!(settings.password(), Some(password), "{password}");
            assert_eq!(settings.username(), Some("app"), "{password}");

            let sentinel = format!(
                "redis+sentinel://app:{written}@s1:26379/mymaster/2?sentinel%5Fpassword={written}"
            );
            let url = SentinelUrl::parse(&sentinel)
                .unwrap_or_else(|e| panic!("{password}: {e}"))
                .expect("a sentinel URL");
            assert_eq!(url.sentinels, vec![("s1".to_owned(), 26379)], "{password}");
            let node = redis::Client::open(url.node_url("h", 1)).expect("a node URL");
            assert_eq!(
                node.get_connection_info().redis_settings().password(),
                Some(password)
            );
            let sentinel = redis::Client::open(url.sentinel_url("s1", 26379)).expect("a URL");
            assert_eq!(
                sentinel.get_connection_info().redis_settings().password(),
                Some(password),
                "the sentinels' password, its key percent-encoded"
            );
        }
        for password in [
            "S3?CR3T",
            "S3#CR3T",
            "S3/CR3T",
            "S3?/#@CR3T",
            "S3,h2:99?CR3T",
        ] {
            for url in [
                format!("redis+cluster://app:{password}@h1:7000,h2:7001"),
                format!("redis+sentinel://app:{password}@s1:26379/mymaster"),
            ] {
                let error = ClusterUrl::parse(&url)
                    .err()
                    .or_else(|| SentinelUrl::parse(&url).err())
                    .unwrap_or_else(|| panic!("{url} is refused"));
                assert!(error.contains("percent-encode"), "{url}: {error}");
                assert!(
                    !error.contains("S3") && !error.contains("CR3T"),
                    "{url}: {error}"
                );
            }
        }
        for password in ["S3@CR3T", "S3?CR3T", "S3:CR3T@h:x"] {
            let malformed = [
                format!("redis+cluster://app:{password}@h1:x"),
                format!("redis+cluster://app:{password}@"),
                format!("redis+cluster://app:{password}@h1:7000/3"),
                format!("redis+cluster://app:{password}@h1:7000/3?x=a@b"),
                format!("redis+cluster://app:{password}"),
                format!("redis+sentinel://app:{password}@s1:26379"),
                format!("redis+sentinel://app:{password}@s1:26379/m/x"),
                format!("redis+sentinel://app:{password}@s1:zz/m"),
                format!("redis+sentinel://app:{password}@s1/m/x?sentinel_password=a@b"),
                format!("redis+sentinel://app:{password}"),
            ];
            for url in malformed {
                let errors = [
                    ClusterUrl::parse(&url).err(),
                    SentinelUrl::parse(&url).err(),
                ];
                for error in errors.into_iter().flatten() {
                    assert!(
                        !error.contains("S3") && !error.contains("CR3T"),
                        "{url}: {error}"
                    );
                }
            }
        }
    }
}
