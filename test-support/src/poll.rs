//! Waiting, off the async runtime, for a condition the servers report themselves.

use std::time::{Duration, Instant};

/// Calls `ready` every `every` until it answers true; panics with `what` once `limit` has
/// passed.
///
/// ```ignore
/// poll_until("the replica did not catch up", Duration::from_secs(10), Duration::from_millis(20), || synced());
/// ```
pub fn poll_until(what: &str, limit: Duration, every: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "{what}");
        // Polled against the servers' own report, within the deadline above.
        #[allow(clippy::disallowed_methods)]
        std::thread::sleep(every);
    }
}
