//! The calls of the `Admin` scripts: `pause`, `drain`, `cleanJobsInSet`, `obliterate`,
//! `moveJobsToWait` (bulk retry and promote) and `removeOrphanedJobs`, keys and arguments in
//! upstream's order.

use bullmq_core::JobState;
use bullmq_core::backend::ObliterateArgs;

use super::flag;
use crate::keys::QueueKeys;
use crate::script::ScriptCall;

/// The suffixes of Node.js's queue key map (`QueueKeys.getKeys`, without the empty one): the
/// queue's own keys, which `removeOrphanedJobs` never mistakes for jobs and checks membership in.
pub(crate) const QUEUE_KEY_SUFFIXES: [&str; 18] = [
    "active",
    "wait",
    "waiting-children",
    "paused",
    "id",
    "delayed",
    "prioritized",
    "stalled-check",
    "completed",
    "failed",
    "stalled",
    "repeat",
    "limiter",
    "meta",
    "events",
    "pc",
    "marker",
    "de",
];

/// The keys a job owns besides its hash, deleted with an orphaned job.
pub(crate) const JOB_SUB_KEY_SUFFIXES: [&str; 6] = [
    "logs",
    "dependencies",
    "processed",
    "failed",
    "unsuccessful",
    "lock",
];

/// Node.js passes `Number.MAX_VALUE` as the cut-off when promoting: every delayed job is due.
pub(crate) const PROMOTE_ALL_BEFORE: &str = "1.7976931348623157e+308";

/// The set a state lives in: `waiting` is the `wait` list, as Node.js's `clean` normalises it.
fn state_set_name(state: JobState) -> &'static str {
    match state {
        JobState::Waiting => "wait",
        other => other.as_str(),
    }
}

/// `pause-7`'s call: the source and target lists swap between pausing and resuming.
pub(crate) fn pause(keys: &QueueKeys, pause: bool, emit_event: bool) -> ScriptCall {
    let (src, dst) = if pause {
        (&keys.wait, &keys.paused)
    } else {
        (&keys.paused, &keys.wait)
    };
    ScriptCall::default()
        .key(src)
        .key(dst)
        .key(&keys.meta)
        .key(&keys.prioritized)
        .key(&keys.events)
        .key(&keys.delayed)
        .key(&keys.marker)
        .arg(if pause { "paused" } else { "resumed" })
        .arg(flag(emit_event))
}

/// `moveJobsToWait-8`'s call, shared by bulk retry and bulk promote.
pub(crate) fn move_jobs_to_wait(
    keys: &QueueKeys,
    state: &str,
    count: u32,
    before: impl redis::ToRedisArgs,
) -> ScriptCall {
    ScriptCall::default()
        .key(&keys.job_prefix)
        .key(&keys.events)
        .key(keys.to_key(state))
        .key(&keys.wait)
        .key(&keys.paused)
        .key(&keys.meta)
        .key(&keys.active)
        .key(&keys.marker)
        .arg(count)
        .arg(before)
        .arg(state)
}

/// `removeOrphanedJobs`: those of `candidates` no state of the queue references.
pub(crate) fn remove_orphaned_jobs(keys: &QueueKeys, candidates: &[String]) -> ScriptCall {
    ScriptCall::default()
        .key(&keys.job_prefix)
        .arg(QUEUE_KEY_SUFFIXES.len())
        .arg(&QUEUE_KEY_SUFFIXES[..])
        .arg(JOB_SUB_KEY_SUFFIXES.len())
        .arg(&JOB_SUB_KEY_SUFFIXES[..])
        .arg(candidates)
}

/// `drain`: the waiting jobs removed, the delayed ones too when `delayed`.
pub(crate) fn drain(keys: &QueueKeys, delayed: bool) -> ScriptCall {
    ScriptCall::default()
        .key(&keys.wait)
        .key(&keys.paused)
        .key(&keys.delayed)
        .key(&keys.prioritized)
        .key(&keys.repeat)
        .arg(&keys.job_prefix)
        .arg(flag(delayed))
}

/// `cleanJobsInSet`: up to `limit` jobs in `state` older than `before_ms` removed.
pub(crate) fn clean_jobs_in_set(
    keys: &QueueKeys,
    state: JobState,
    before_ms: u64,
    limit: u32,
) -> ScriptCall {
    let set = state_set_name(state);
    ScriptCall::default()
        .key(keys.to_key(set))
        .key(&keys.events)
        .key(&keys.repeat)
        .arg(&keys.job_prefix)
        .arg(before_ms)
        .arg(limit)
        .arg(set)
}

/// `obliterate`: one batch of the queue's keys removed.
pub(crate) fn obliterate(keys: &QueueKeys, args: ObliterateArgs) -> ScriptCall {
    ScriptCall::default()
        .key(&keys.meta)
        .key(&keys.job_prefix)
        .arg(args.count)
        // Node.js sends `null` when not forced, which its client writes as an empty string.
        .arg(if args.force { "force" } else { "" })
}
