//! The arguments of a finishing move taken straight through a backend
//! (`move_to_completed`, `move_to_failed`), as the store and conformance tests build them.
//! A test that needs another worker, retention or fetch sets those fields over these with
//! struct update syntax.

use bullmq_core::backend::{CompleteArgs, FailArgs, FieldUpdates, LockToken};
use bullmq_core::options::KeepJobs;

/// The reason [`fail_args`] fails with.
pub const REASON: &str = "boom";

/// The one-frame stack trace [`fail_args`] writes, as Node.js would record `Error: boom`.
pub const STACK: &str = "Error: boom\n    at run (x.js:1:1)";

/// Completes the job held with `token`, returning the JSON text `value`; keeps every job, by
/// a worker of default settings, without fetching the next.
pub fn complete_args(token: &str, value: &str) -> CompleteArgs {
    CompleteArgs {
        token: LockToken::new(token),
        return_value: value.to_owned(),
        keep: KeepJobs::KeepAll,
        worker: std::sync::Arc::default(),
        fetch_next: false,
    }
}

/// Fails the job held with `token` with [`REASON`] and the one-frame [`STACK`], otherwise as
/// [`complete_args`] completes.
pub fn fail_args(token: &str) -> FailArgs {
    FailArgs {
        token: LockToken::new(token),
        failed_reason: REASON.to_owned(),
        keep: KeepJobs::KeepAll,
        fields: FieldUpdates {
            stacktrace: Some(vec![STACK.to_owned()]),
            failed_reason: Some(REASON.to_owned()),
            telemetry_metadata: None,
        },
        worker: std::sync::Arc::default(),
        fetch_next: false,
    }
}
