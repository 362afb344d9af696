//! Names no other test (or run) uses, and the wall clock as job timestamps count it.

/// A Redis key prefix no other test uses: `bullmq-test-<uuid>`.
pub fn unique_prefix() -> String {
    unique_name("bullmq-test")
}

/// `<tag>-<uuid>` (a fresh name for a queue, a folder, a client…). The uuid is 32 hex digits.
pub fn unique_name(tag: &str) -> String {
    format!("{tag}-{}", uuid::Uuid::new_v4().simple())
}

/// Milliseconds since the Unix epoch, as job timestamps count them.
pub fn now_ms() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    u64::try_from(since.as_millis()).expect("milliseconds fit in u64")
}
