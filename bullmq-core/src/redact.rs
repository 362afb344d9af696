//! Connection URLs without their secrets, for `Debug`, errors and logs.
//!
//! Both backends take a URL that may carry a password in one of three places; each has its
//! own helper here, and [`redact_url`] applies all three:
//! - the user information: `redis://user:secret@host`, `postgres://bob:secret@db/app`;
//! - the query: `redis+unix:///run/redis.sock?pass=secret`, `unix:///…?pass=…`,
//!   `postgres://bob@db/app?password=secret`, `…?user=bob&password=…`;
//! - a libpq keyword string: `host=db password=secret`.

/// What a secret is printed as.
const MASK: &str = "***";

/// Query parameters that hold a secret (redis-rs reads `pass`, libpq and sqlx `password`,
/// a Sentinel URL `sentinel_password` for the sentinels themselves).
const SECRET_PARAMS: [&str; 4] = ["pass", "password", "sslpassword", "sentinel_password"];

/// `url` with every password replaced by `***`; the rest (scheme, user, host, path,
/// other parameters) kept, so the printed target still says where it points.
///
/// ```
/// use bullmq_core::redact::redact_url;
///
/// assert_eq!(redact_url("redis://:s3cret@cache:6379"), "redis://:***@cache:6379");
/// assert_eq!(
///     redact_url("postgres://bob@db/app?sslmode=require&password=s3cret"),
///     "postgres://bob@db/app?sslmode=require&password=***"
/// );
/// ```
#[must_use]
pub fn redact_url(url: &str) -> String {
    if url.contains("://") {
        redact_query(&redact_user_info(url))
    } else {
        redact_keywords(url)
    }
}

/// `scheme://user:secret@host…` as `scheme://user:***@host…`.
///
/// The user information ends where [`user_info_end`] says: a password with an unescaped `/`,
/// `@`, `?` or `#` in it is still masked whole.
#[must_use]
pub fn redact_user_info(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some(at) = user_info_end(rest) else {
        return url.to_owned();
    };
    match rest[..at].split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:{MASK}{}", &rest[at..]),
        None => url.to_owned(),
    }
}

/// Where the user information of `rest` (a URL after its `scheme://`) ends: the index of the
/// `@` that closes it, or `None` when there is none.
///
/// A password should be percent-encoded, but raw ones are common, and a raw `?`, `#`, `/` or
/// `@` in it must not make the rest of it read as a host, a path or a query (then printed).
/// The `@` taken is one followed by what can be a host list (up to the next `/`, `?` or `#`):
/// the last such before the first `?`/`#` (a query value may hold a raw `@`), else the first
/// such after it (the password held the `?`/`#`), else the last `@` of all.
#[must_use]
pub fn user_info_end(rest: &str) -> Option<usize> {
    let hosts_follow = |at: usize| {
        let after = &rest[at + 1..];
        let hosts = &after[..after.find(['/', '?', '#']).unwrap_or(after.len())];
        !hosts.is_empty()
            && hosts
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-_:[],%".contains(c))
    };
    let query = rest.find(['?', '#']).unwrap_or(rest.len());
    let ats = || rest.match_indices('@').map(|(i, _)| i);
    if let Some(at) = ats().rev().find(|&at| at < query && hosts_follow(at)) {
        return Some(at);
    }
    // No `@` before the query: when the URL starts with a host list and the first `@` is in a
    // query value (`h1/m?sentinel_password=p@ss`), there is no user information.
    let first = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let in_value = ats()
        .next()
        .is_some_and(|at| at > query && rest[query..at].contains('='));
    if in_value && is_host_list(first) {
        return None;
    }
    ats()
        .find(|&at| at > query && hosts_follow(at))
        .or_else(|| rest.rfind('@'))
}

/// Whether `text` is a comma-separated list of `host[:port]` with numeric ports (`[v6]`
/// hosts allowed): what a URL without user information starts with. `user:pa` (a password's
/// start) is not one.
fn is_host_list(text: &str) -> bool {
    !text.is_empty()
        && text.split(',').all(|entry| {
            let (host, port) = match entry.strip_prefix('[') {
                Some(v6) => match v6.split_once(']') {
                    Some((addr, tail)) => (addr, tail.strip_prefix(':').unwrap_or(tail)),
                    None => return false,
                },
                None => entry.split_once(':').unwrap_or((entry, "")),
            };
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-_:".contains(c))
                && port.chars().all(|c| c.is_ascii_digit())
        })
}

/// `…?user=bob&pass=secret` as `…?user=bob&pass=***` (`pass`, `password`, `sslpassword`).
#[must_use]
pub fn redact_query(url: &str) -> String {
    let Some((base, rest)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (query, fragment) = match rest.split_once('#') {
        Some((query, fragment)) => (query, Some(fragment)),
        None => (rest, None),
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_secret(key) => format!("{key}={MASK}"),
            _ => pair.to_owned(),
        })
        .collect();
    let mut out = format!("{base}?{}", pairs.join("&"));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// `host=db password=secret` as `host=db password=***`.
#[must_use]
pub fn redact_keywords(conninfo: &str) -> String {
    conninfo
        .split(' ')
        .map(|word| match word.split_once('=') {
            Some((key, _)) if is_secret(key.trim()) => format!("{key}={MASK}"),
            _ => word.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_secret(key: &str) -> bool {
    SECRET_PARAMS.iter().any(|s| key.eq_ignore_ascii_case(s))
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    /// Every form either backend accepts with a secret in it: the secret never survives, the
    /// rest does.
    #[test]
    fn every_url_form_loses_its_secret_and_keeps_its_target() {
        let forms = [
            ("redis://:s3cret@host:6379", "redis://:***@host:6379"),
            (
                "redis://alice:s3cret@host:6379/2",
                "redis://alice:***@host:6379/2",
            ),
            (
                "rediss://alice:s3cret@host:6380",
                "rediss://alice:***@host:6380",
            ),
            ("valkey://alice:s3cret@host", "valkey://alice:***@host"),
            (
                "redis+cluster://alice:s3cret@h1:7000,h2:7001/",
                "redis+cluster://alice:***@h1:7000,h2:7001/",
            ),
            (
                "redis+sentinel://alice:s3cret@s1:26379,s2:26379/mymaster?sentinel_username=sam&sentinel_password=s3cret",
                "redis+sentinel://alice:***@s1:26379,s2:26379/mymaster?sentinel_username=sam&sentinel_password=***",
            ),
            (
                "redis+unix:///run/redis.sock?db=1&pass=s3cret",
                "redis+unix:///run/redis.sock?db=1&pass=***",
            ),
            (
                "unix:///run/redis.sock?user=alice&pass=s3cret",
                "unix:///run/redis.sock?user=alice&pass=***",
            ),
            (
                "postgres://bob:s3cret@db:5432/app?sslmode=require",
                "postgres://bob:***@db:5432/app?sslmode=require",
            ),
            (
                "postgresql://bob@db/app?password=s3cret",
                "postgresql://bob@db/app?password=***",
            ),
            (
                "postgres://db/app?user=bob&password=s3cret&sslmode=verify-full",
                "postgres://db/app?user=bob&password=***&sslmode=verify-full",
            ),
            (
                "postgres://bob@db/app?sslpassword=s3cret&PASSWORD=s3cret",
                "postgres://bob@db/app?sslpassword=***&PASSWORD=***",
            ),
            ("redis://:pa/ss@w0rd@host", "redis://:***@host"),
            ("redis://:s3?cret@host:1/0", "redis://:***@host:1/0"),
            ("redis://u:s3#cret@host", "redis://u:***@host"),
            (
                "redis+cluster://u:s3/c?r#et@h1:1,h2:2?x=1",
                "redis+cluster://u:***@h1:1,h2:2?x=1",
            ),
            (
                "redis+sentinel://u:s3cret@h1/m?sentinel_password=s3cret@x",
                "redis+sentinel://u:***@h1/m?sentinel_password=***",
            ),
            ("redis://u:12?s3cret@host", "redis://u:***@host"),
            (
                "redis+sentinel://h1:26379,h2/m?sentinel_password=s3cret@x",
                "redis+sentinel://h1:26379,h2/m?sentinel_password=***",
            ),
            (
                "redis://:s3cret@host/#insecure",
                "redis://:***@host/#insecure",
            ),
            (
                "host=db user=bob password=s3cret",
                "host=db user=bob password=***",
            ),
        ];
        for (url, shown) in forms {
            assert_eq!(redact_url(url), shown, "{url}");
            assert!(!redact_url(url).contains("s3cret"), "{url}");
        }
        for plain in [
            "redis://127.0.0.1:6379",
            "postgres://bob@db/app",
            "redis://[::1]:6379",
        ] {
            assert_eq!(redact_url(plain), plain);
        }
    }
}
