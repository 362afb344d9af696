//! How a connection URL is read, exactly as redis-rs 1.x and sqlx 0.8 read it (both through
//! the `url` crate), so that what [`redact`](crate::redact) masks is what the clients use as
//! the password, and so that a URL the two could read differently from what its writer meant
//! is refused rather than guessed at.
//!
//! The rules, shared by every scheme (Redis, Cluster, Sentinel, PostgreSQL):
//! - the authority (user information and hosts) ends at the first `/`, `?` or `#` after
//!   `scheme://`; the user information ends at the last `@` before that. A raw `@` in a
//!   password is therefore read whole; a raw `/`, `?` or `#` cannot be (it ends the authority),
//!   so a URL that looks like one ([`ambiguity`]) is refused;
//! - query keys and values are form-decoded (`%70ass` is `pass`, `+` is a space);
//! - a fragment is read by nobody but redis-rs, which knows only `#insecure`.

/// A URL taken apart at the places the clients split it; borrowed from the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlParts<'a> {
    /// Before `://`.
    pub scheme: &'a str,
    /// Between `://` and the last `@` of the authority, when there is one (never printed).
    pub user_info: Option<&'a str>,
    /// The host list: after the user information, up to the first `/`, `?` or `#`.
    pub hosts: &'a str,
    /// From the `/` after the hosts (included) up to the query, or empty.
    pub path: &'a str,
    /// After `?`, up to the fragment.
    pub query: Option<&'a str>,
    /// After `#`.
    pub fragment: Option<&'a str>,
}

/// The URL parameters sqlx 0.8 reads, besides `options[…]` (the PostgreSQL backend refuses any
/// other).
pub const POSTGRES_KEYS: [&str; 17] = [
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "statement-cache-capacity",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
];

/// The query keys redis-rs and this crate's Sentinel URLs read.
pub const REDIS_KEYS: [&str; 7] = [
    "db",
    "protocol",
    "user",
    "pass",
    "password",
    "sentinel_username",
    "sentinel_password",
];

/// `url` split as the `url` crate splits it, or `None` without `://` (a libpq keyword string).
///
/// ```
/// use bullmq_core::url_form::split;
///
/// let parts = split("redis://u:p@ss@cache:6379/2?protocol=3").unwrap();
/// assert_eq!(parts.user_info, Some("u:p@ss"));
/// assert_eq!(parts.hosts, "cache:6379");
/// assert_eq!(parts.path, "/2");
/// assert_eq!(parts.query, Some("protocol=3"));
/// ```
#[must_use]
pub fn split(url: &str) -> Option<UrlParts<'_>> {
    let (scheme, rest) = url.split_once("://")?;
    let (rest, query, fragment) = cut_query_and_fragment(rest);
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let (user_info, hosts) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    Some(UrlParts {
        scheme,
        user_info,
        hosts,
        path,
        query,
        fragment,
    })
}

/// The `(key, value)` pairs of a query, still encoded; a pair without `=` has no value.
pub fn pairs(query: &str) -> impl Iterator<Item = (&str, Option<&str>)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| cut(pair, '='))
}

/// `text` cut at its first `sep`: what comes before, and what comes after when there is one.
pub(crate) fn cut(text: &str, sep: char) -> (&str, Option<&str>) {
    text.split_once(sep)
        .map_or((text, None), |(before, after)| (before, Some(after)))
}

/// `rest` (a URL after its host, or after its user information) cut before its `?query` and
/// its `#fragment`, and those two, still encoded. The `#` is cut first: a `?` in the fragment
/// belongs to it.
pub(crate) fn cut_query_and_fragment(rest: &str) -> (&str, Option<&str>, Option<&str>) {
    let (rest, fragment) = cut(rest, '#');
    let (rest, query) = cut(rest, '?');
    (rest, query, fragment)
}

/// `text` form-decoded as `url::Url::query_pairs` decodes it: `%XX` escapes, `+` as a space,
/// bytes that are not UTF-8 replaced.
///
/// ```
/// assert_eq!(bullmq_core::url_form::decode("pa%73s"), "pass");
/// assert_eq!(bullmq_core::url_form::decode("a+b%2"), "a b%2");
/// ```
#[must_use]
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the (decoded) query key is one either store reads.
#[must_use]
pub fn is_known_key(decoded: &str) -> bool {
    REDIS_KEYS.contains(&decoded)
        || POSTGRES_KEYS.contains(&decoded)
        // sqlx's `options`, whole or as `options[…]`.
        || decoded == "options"
        || (decoded.starts_with("options[") && decoded.ends_with(']'))
}

/// Why `url` could be read two ways (so that part of a password could be taken for a host,
/// a path or a query), or `None` when it cannot. The message names the cause and the fix and
/// never quotes the URL.
///
/// ```
/// use bullmq_core::url_form::ambiguity;
///
/// assert!(ambiguity("redis://u:p@ss@cache:6379").is_none()); // a raw `@` is read whole
/// assert!(ambiguity("postgres://bob@db/app?user=bob@corp").is_none());
/// assert!(ambiguity("redis://u:pa/ss@cache").is_some());
/// assert!(ambiguity("redis://u:pa%2Fss@cache").is_none());
/// ```
#[must_use]
pub fn ambiguity(url: &str) -> Option<&'static str> {
    let parts = split(url)?;
    if parts.fragment.is_some_and(|f| f != "insecure") {
        return Some(
            "the URL has a `#` part, which neither store reads (only `rediss://…#insecure` is), \
             so it may be the end of a password or a query value; percent-encode a `#` in \
             them as %23",
        );
    }
    if stray_at(url).is_some() {
        return Some(
            "the URL has an `@` after its host part (in the path, a query key, or the value \
             of a parameter no store reads), so part of a password may have been taken for \
             the host; if a password (or a query value) holds a raw `/`, `?`, `#` or `&`, \
             percent-encode them as %2F, %3F, %23 and %26 (an `@` as %40)",
        );
    }
    if parts.user_info.is_none() && !is_host_list(parts.hosts) && parts.hosts.contains(':') {
        return Some(
            "the URL's host part has a `:` that no port number follows, so it may be a user \
             and the start of a password; if a password holds a raw `/`, `?` or `#`, \
             percent-encode them as %2F, %3F and %23",
        );
    }
    None
}

/// The last `@` after the authority that is not inside the value of a known query key: the
/// place where the user information may really end, when the password held a raw `/`, `?` or
/// `#`. Its index in the URL.
#[must_use]
pub fn stray_at(url: &str) -> Option<usize> {
    let parts = split(url)?;
    let mut last = None;
    // The parts borrow from `url`: their offsets in it.
    let base = url.as_ptr() as usize;
    let offset = |s: &str| s.as_ptr() as usize - base;
    if let Some(at) = parts.path.rfind('@') {
        last = Some(offset(parts.path) + at);
    }
    if let Some(query) = parts.query {
        for (key, value) in pairs(query) {
            if let Some(at) = key.rfind('@') {
                last = Some(offset(key) + at);
            }
            if let Some(value) = value
                && !is_known_key(&decode(key))
                && let Some(at) = value.rfind('@')
            {
                last = Some(offset(value) + at);
            }
        }
    }
    if let Some(fragment) = parts.fragment
        && let Some(at) = fragment.rfind('@')
    {
        last = Some(offset(fragment) + at);
    }
    last
}

/// Whether `text` is a comma-separated list of `host[:port]` with numeric ports (`[v6]`
/// hosts allowed), or empty: what the authority holds when it has no user information.
#[must_use]
pub fn is_host_list(text: &str) -> bool {
    text.split(',').all(|entry| {
        let (host, port) = match entry.strip_prefix('[') {
            Some(v6) => match v6.split_once(']') {
                Some((addr, "")) => (addr, ""),
                Some((addr, tail)) => match tail.strip_prefix(':') {
                    Some(port) => (addr, port),
                    None => return false,
                },
                None => return false,
            },
            None => {
                let (host, port) = entry.split_once(':').unwrap_or((entry, ""));
                if host.contains(['[', ']']) {
                    return false;
                }
                (host, port)
            }
        };
        !host.contains(['@', '/', '?', '#']) && port.chars().all(|c| c.is_ascii_digit())
    })
}
