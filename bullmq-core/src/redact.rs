//! Connection URLs without their secrets, for `Debug`, errors and logs.
//!
//! Both backends take a URL that may carry a password in one of three places; each has its
//! own helper here, and [`redact_url`] applies all three:
//! - the user information: `redis://user:secret@host`, `postgres://bob:secret@db/app`;
//! - the query: `redis+unix:///run/redis.sock?pass=secret`, `unix:///…?pass=…`,
//!   `postgres://bob@db/app?password=secret`, `…?user=bob&password=…`;
//! - a libpq keyword string: `host=db password=secret`.

use std::fmt::Write as _;

use crate::url_form::{self, UrlParts};

/// What a secret is printed as.
const MASK: &str = "***";

/// Query parameters that hold a secret, compared with the key form-decoded and in any case
/// (redis-rs reads `pass`, libpq and sqlx `password`, libpq `sslpassword`, a Sentinel URL
/// `sentinel_password` for the sentinels themselves).
const SECRET_PARAMS: [&str; 4] = ["pass", "password", "sslpassword", "sentinel_password"];

/// `url` with every password replaced by `***`; the rest (scheme, user, host, path,
/// other parameters) kept, so the printed target still says where it points.
///
/// The URL is read as the clients read it ([`url_form`]): the user information's password,
/// and the value of every query key that decodes to `pass`, `password`, `sslpassword` or
/// `sentinel_password`, are masked. Where a URL could be read another way (a password
/// holding a raw `/`, `?` or `#`, which [`url_form::ambiguity`] refuses at connect), all
/// that could be part of the password is masked too, and a `#` part other than `#insecure`.
///
/// ```
/// use bullmq_core::redact::redact_url;
///
/// assert_eq!(redact_url("redis://:s3cret@cache:6379"), "redis://:***@cache:6379");
/// assert_eq!(
///     redact_url("postgres://bob@db/app?sslmode=require&passw%6Frd=s3cret"),
///     "postgres://bob@db/app?sslmode=require&passw%6Frd=***"
/// );
/// assert_eq!(redact_url("redis://u:p@ss/w?rd@cache"), "redis://u:***@cache");
/// ```
#[must_use]
pub fn redact_url(url: &str) -> String {
    let Some(parts) = url_form::split(url) else {
        return redact_keywords(url);
    };
    if let Some(at) = url_form::stray_at(url) {
        return redact_as_user_info_up_to(url, &parts, at);
    }
    let mut out = format!("{}://", parts.scheme);
    match parts.user_info {
        Some(info) => match info.split_once(':') {
            Some((user, _)) => {
                let _ = write!(out, "{user}:{MASK}@{}", parts.hosts);
            }
            None => {
                let _ = write!(out, "{info}@{}", parts.hosts);
            }
        },
        // `user:pass` with no host after it (or a raw `/`, `?` or `#` in the password).
        None if !url_form::is_host_list(parts.hosts) => match parts.hosts.split_once(':') {
            Some((user, _)) => {
                let _ = write!(out, "{user}:{MASK}");
            }
            None => out.push_str(parts.hosts),
        },
        None => out.push_str(parts.hosts),
    }
    out.push_str(parts.path);
    push_query_and_fragment(&mut out, parts.query, parts.fragment);
    out
}

/// `url` printed as if its user information ran up to the `@` at `at` (a password with a raw
/// `/`, `?` or `#`): everything before that `@` but the user name is masked.
fn redact_as_user_info_up_to(url: &str, parts: &UrlParts<'_>, at: usize) -> String {
    let rest = &url[parts.scheme.len() + 3..at];
    let user = rest
        .split_once(':')
        .map(|(user, _)| user)
        .filter(|user| !user.contains(['/', '?', '#', '@']));
    let mut out = match user {
        Some(user) => format!("{}://{user}:{MASK}@", parts.scheme),
        None => format!("{}://{MASK}@", parts.scheme),
    };
    if url.find('#').is_some_and(|hash| at > hash) {
        // The `@` is in the `#` part, which is nobody's: none of it is shown.
        out.push_str(MASK);
        return out;
    }
    let tail = &url[at + 1..];
    let (tail, query, fragment) = url_form::cut_query_and_fragment(tail);
    if tail.contains('@') {
        // Nothing after the last `@` that could end a password should hold one.
        out.push_str(MASK);
        return out;
    }
    out.push_str(tail);
    push_query_and_fragment(&mut out, query, fragment);
    out
}

fn push_query_and_fragment(out: &mut String, query: Option<&str>, fragment: Option<&str>) {
    if let Some(query) = query {
        out.push('?');
        out.push_str(&redact_pairs(query));
    }
    match fragment {
        Some("insecure") => out.push_str("#insecure"),
        Some(_) => {
            let _ = write!(out, "#{MASK}");
        }
        None => {}
    }
}

/// The pairs of `query` with the values of secret keys masked.
fn redact_pairs(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_secret(&url_form::decode(key)) => format!("{key}={MASK}"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// `scheme://user:secret@host…` as `scheme://user:***@host…`: [`redact_url`] without the
/// query.
#[must_use]
pub fn redact_user_info(url: &str) -> String {
    let Some(parts) = url_form::split(url) else {
        return url.to_owned();
    };
    match parts.user_info.and_then(|info| info.split_once(':')) {
        Some((user, _)) => {
            let after = &url[parts.scheme.len() + 3 + parts.user_info.map_or(0, str::len)..];
            format!("{}://{user}:{MASK}{after}", parts.scheme)
        }
        None => url.to_owned(),
    }
}

/// Where the user information of `rest` (a URL after its `scheme://`) ends: the index of the
/// `@` that closes it (the last one before the first `/`, `?` or `#`, as the clients read
/// it), or `None` when there is none.
#[must_use]
pub fn user_info_end(rest: &str) -> Option<usize> {
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    authority.rfind('@')
}

/// `…?user=bob&pass=secret` as `…?user=bob&pass=***` (`pass`, `password`, `sslpassword`,
/// `sentinel_password`, whatever the case or percent-encoding of the key).
#[must_use]
pub fn redact_query(url: &str) -> String {
    let Some((base, rest)) = url.split_once('?') else {
        return url.to_owned();
    };
    let (query, fragment) = url_form::cut(rest, '#');
    let mut out = format!("{base}?{}", redact_pairs(query));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// `host=db password=secret` as `host=db password=***`: libpq's keyword form, where a value
/// may be quoted (`password='a b'`) and `=` may have spaces around it. Printed as
/// `key=value` pairs one space apart; what does not read as pairs is masked.
#[must_use]
pub fn redact_keywords(conninfo: &str) -> String {
    let mut pairs = Vec::new();
    let mut rest = conninfo.trim_start();
    while !rest.is_empty() {
        let key_end = rest.find(['=', ' ', '\t', '\n']).unwrap_or(rest.len());
        let key = &rest[..key_end];
        let Some(after) = rest[key_end..].trim_start().strip_prefix('=') else {
            pairs.push(MASK.to_owned());
            break;
        };
        let after = after.trim_start();
        let value_end = if after.starts_with('\'') {
            quoted_end(after)
        } else {
            after.find([' ', '\t', '\n']).unwrap_or(after.len())
        };
        let value = &after[..value_end];
        pairs.push(if is_secret(key) {
            format!("{key}={MASK}")
        } else {
            format!("{key}={value}")
        });
        rest = after[value_end..].trim_start();
    }
    pairs.join(" ")
}

/// The end of the quoted value at the start of `text` (after its closing quote; `\'` and
/// `\\` are escapes), or the end of `text` when it is not closed.
fn quoted_end(text: &str) -> usize {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '\'' => return i + 1,
            _ => {}
        }
    }
    text.len()
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
            // The `@` in the `#` part: nothing after it is shown either.
            ("redis://u:s3#cret@host", "redis://u:***@***"),
            (
                "redis+cluster://u:s3/c?r#et@h1:1,h2:2?x=1",
                "redis+cluster://u:***@***",
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
            (
                "host=db password = 's3 \\' cret' user=bob",
                "host=db password=*** user=bob",
            ),
            // Keys as the clients decode them.
            (
                "redis+unix:///s.sock?pa%73s=s3cret",
                "redis+unix:///s.sock?pa%73s=***",
            ),
            ("unix:///s.sock?%70ass=s3cret", "unix:///s.sock?%70ass=***"),
            (
                "postgres://db/app?passw%6Frd=s3cret",
                "postgres://db/app?passw%6Frd=***",
            ),
            (
                "redis+sentinel://h1/m?sentinel%5Fpassword=s3cret",
                "redis+sentinel://h1/m?sentinel%5Fpassword=***",
            ),
            ("redis://u:p@ss/w?rd#..s3cret@host", "redis://u:***@***"),
            ("redis://u:p@ss/w?rd..s3cret@host", "redis://u:***@host"),
            ("redis://u:p@s3cret@host", "redis://u:***@host"),
            ("redis://u:s3cret", "redis://u:***"),
            (
                "redis+unix:///s.sock?pass=a#s3cret",
                "redis+unix:///s.sock?pass=***#***",
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
