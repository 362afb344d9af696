//! Shared by the examples: a store URL fit for a message.

/// `url` with its user information (user name and password) hidden.
pub(crate) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}
