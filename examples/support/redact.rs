//! Shared by the examples: a store URL fit for a message.

/// `url` with its password (if it has one) hidden; the user name stays.
pub(crate) fn redacted(url: &str) -> String {
    let (Some(scheme), Some(at)) = (url.find("://"), url.rfind('@')) else {
        return url.to_owned();
    };
    let start = scheme + 3;
    match url.get(start..at).and_then(|userinfo| userinfo.find(':')) {
        Some(colon) => format!("{}:***{}", &url[..start + colon], &url[at..]),
        None => url.to_owned(),
    }
}
