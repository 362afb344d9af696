//! Small things many tests say about jobs: a script's refusal code, a lock token, and the
//! processor every flow test runs in both runtimes.

use bullmq_core::backend::{Backend, LockToken};
use bullmq_core::worker::{ActiveJob, CancellationToken, JobError, ProcessResult};
use bullmq_core::{Error, ScriptErrorCode};

/// The code of a script refusal, or a panic naming what came instead.
pub fn script_code(err: &Error) -> ScriptErrorCode {
    match err {
        Error::Script(e) => e.code,
        other => panic!("expected a script refusal, got {other}"),
    }
}

/// A lock token.
pub fn token(t: &str) -> LockToken {
    LockToken::new(t)
}

/// What every flow test's processor does, in Rust on each store and in Node
/// (`tests/node/flow-work.mjs`): a job whose name starts with `fail` fails with `boom <name>`;
/// any other returns its name with its children's values and ignored failures.
pub async fn standard_flow_processor<B: Backend>(
    job: ActiveJob<B>,
    _: CancellationToken,
) -> ProcessResult {
    if job.name.starts_with("fail") {
        return Err(JobError::failed(format!("boom {}", job.name)));
    }
    let children = job.get_children_values().await?;
    let ignored = job.get_ignored_children_failures().await?;
    Ok(serde_json::json!({"name": job.name, "children": children, "ignored": ignored}))
}
