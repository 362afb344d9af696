//! The `application_name` of dedicated connections, by which upstream discovers workers and
//! `QueueEvents` (`getWorkers`, `getQueueEvents`, through `get_client_list.sql`).
//!
//! Only dedicated connections are named; pooled ones keep an empty name, which
//! `get_client_list.sql` leaves out.

/// The name of a worker's dedicated connection: the queue name, or `<queue>:w:<name>` for a
/// named worker (upstream's `createPostgresBackend` with `withBlockingConnection`).
#[must_use]
pub fn worker(queue: &str, worker_name: Option<&str>) -> String {
    match worker_name {
        Some(name) if !name.is_empty() => format!("{queue}:w:{name}"),
        _ => queue.to_owned(),
    }
}

/// The name of a `QueueEvents`' dedicated connection: `<queue>:qe`.
#[must_use]
pub fn queue_events(queue: &str) -> String {
    format!("{queue}:qe")
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_follow_upstream() {
        assert_eq!(super::worker("mail", None), "mail");
        // Upstream tests the name for truthiness: an empty one is no name.
        assert_eq!(super::worker("mail", Some("")), "mail");
        assert_eq!(super::worker("mail", Some("w1")), "mail:w:w1");
        assert_eq!(super::queue_events("mail"), "mail:qe");
    }
}
