//! What a queue's wait list holds, as the tests compare it.

use bullmq_core::Queue;
use bullmq_core::backend::{Queries, Range};

/// The names of `queue`'s waiting jobs, sorted.
pub async fn waiting_names<B: Queries>(queue: &Queue<B>) -> Vec<String> {
    let mut names: Vec<String> = queue
        .get_waiting(Range::ALL)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.name)
        .collect();
    names.sort();
    names
}
