//! An attempt failed through the job's own handle, as a worker fails it when its processor
//! returns an error: what the job API cases of every store check retries and traces with.

use std::time::Duration;

use bullmq_core::backend::Backend;
use bullmq_core::options::Backoff;
use bullmq_core::{FailOutcome, JobFailure, JobOptions, JobRef};

use crate::token;

/// Fails `job`'s attempt, held with token `t`, with `failure` (fetching no next job): retried,
/// delayed or failed for good, as the job's handle decided.
pub async fn fail_attempt<B: Backend>(job: &JobRef<'_, B>, failure: &JobFailure) -> FailOutcome {
    job.move_to_failed(failure, &token("t"), false)
        .await
        .expect("move_to_failed")
}

/// An unrecoverable failure, `fatal` with the trace `Error: fatal`: the job fails for good
/// whatever attempts it has left.
pub fn fatal() -> JobFailure {
    JobFailure::new("fatal")
        .stack("Error: fatal")
        .unrecoverable()
}

/// The backoff of [`retried_later`].
pub const RETRY_DELAY: Duration = Duration::from_secs(3);

/// Two attempts with a fixed backoff of [`RETRY_DELAY`]: a failed first attempt waits in
/// delayed for its retry.
pub fn retried_later() -> JobOptions {
    JobOptions::new()
        .attempts(2)
        .backoff(Backoff::fixed(RETRY_DELAY))
}

/// Asserts that the failed attempt is retried after [`RETRY_DELAY`], from delayed.
pub fn assert_retried_later(outcome: &FailOutcome) {
    assert!(
        matches!(outcome, FailOutcome::RetryDelayed { delay, .. } if *delay == RETRY_DELAY),
        "{outcome:?}"
    );
}
