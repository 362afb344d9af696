//! How many jobs a queue holds in each of some states.

use bullmq_core::Queue;
use bullmq_core::backend::Backend;
use bullmq_core::job::{JobState, JobType};

/// The number of `queue`'s jobs in each of `states`, in that order.
pub async fn state_counts<B: Backend>(queue: &Queue<B>, states: &[JobState]) -> Vec<u64> {
    let types: Vec<JobType> = states.iter().map(|s| JobType::State(*s)).collect();
    let counts = queue.get_job_counts(&types).await.expect("get_job_counts");
    counts.into_iter().map(|(_, n)| n).collect()
}
