//! The check a soak ends with: every job it added completed, and none is left anywhere else.

use bullmq_core::Queue;
use bullmq_core::backend::Backend;
use bullmq_core::job::JobState;

use crate::counts::state_counts;

/// Completed first, then every state a job that has not completed may be in.
const COMPLETED_THEN_THE_REST: [JobState; 6] = [
    JobState::Completed,
    JobState::Failed,
    JobState::Active,
    JobState::Waiting,
    JobState::Delayed,
    JobState::Prioritized,
];

/// Asserts that `queue` holds `added` completed jobs and none failed, active, waiting,
/// delayed or prioritized.
pub async fn assert_only_completed<B: Backend>(queue: &Queue<B>, added: usize) {
    let counts = state_counts(queue, &COMPLETED_THEN_THE_REST).await;
    let added = u64::try_from(added).expect("a job count fits in u64");
    assert_eq!(counts, [added, 0, 0, 0, 0, 0], "counters");
}
