//! Shared by the examples: a store URL fit for a message.

/// `url` with every password it may carry hidden (user information, `pass=`/`password=`
/// query parameters, libpq keywords); the user name stays.
pub(crate) fn redacted(url: &str) -> String {
    bullmq::redact_url(url)
}
