//! The calls of the `Queries` scripts: `getStateV2`, `isFinished`, `isMaxed`,
//! `getRateLimitTtl`, `getCounts`, `getCountsPerPriority`, `getRanges`, `getDependencyCounts`,
//! `getMetrics` and `paginate`, keys and arguments in upstream's order.

use bullmq_core::JobId;
use bullmq_core::backend::{DependencyKind, Range};
use bullmq_core::codec;
use bullmq_core::job::{FinishedState, JobType};

use super::flag;
use crate::keys::QueueKeys;
use crate::script::ScriptCall;

/// How many `SSCAN`/`HSCAN` rounds one `paginate` call may take (Node.js' `maxIterations`).
const PAGINATE_MAX_ITERATIONS: u64 = 5;

/// `call` with one argument per job type, as `getCounts` and `getRanges` take them.
fn with_types(types: &[JobType], mut call: ScriptCall) -> ScriptCall {
    for t in types {
        call = call.arg(codec::job_type_arg(*t));
    }
    call
}

/// `getStateV2`: the state the job is in.
pub(crate) fn get_state(k: &QueueKeys, job_id: &JobId) -> ScriptCall {
    ScriptCall::default()
        .key(&k.completed)
        .key(&k.failed)
        .key(&k.delayed)
        .key(&k.active)
        .key(&k.wait)
        .key(&k.paused)
        .key(&k.waiting_children)
        .key(&k.prioritized)
        .arg(job_id.as_bytes())
}

/// `isFinished`, asking for the return value or failure reason too.
pub(crate) fn is_finished(k: &QueueKeys, job_id: &JobId) -> ScriptCall {
    ScriptCall::default()
        .key(&k.completed)
        .key(&k.failed)
        .key(k.job_key(job_id, ""))
        .arg(job_id.as_bytes())
        .arg("1")
}

/// `isMaxed`: whether the queue's global concurrency is reached.
pub(crate) fn is_maxed(k: &QueueKeys) -> ScriptCall {
    ScriptCall::default().key(&k.meta).key(&k.active)
}

/// `getRateLimitTtl`; `None` for `max_jobs` (sent as 0) lets the script use the queue's
/// global limit.
pub(crate) fn get_rate_limit_ttl(k: &QueueKeys, max_jobs: Option<u64>) -> ScriptCall {
    ScriptCall::default()
        .key(&k.limiter)
        .key(&k.meta)
        .arg(max_jobs.unwrap_or(0))
}

/// `getCounts`: one count per type, the delayed jobs due before `delayed_before` if given.
pub(crate) fn get_counts(
    k: &QueueKeys,
    types: &[JobType],
    delayed_before: Option<u64>,
) -> ScriptCall {
    let mut call = ScriptCall::default().key(&k.job_prefix);
    if let Some(cutoff) = delayed_before {
        call = call.arg(cutoff);
    }
    with_types(types, call)
}

/// `getCountsPerPriority`: the waiting jobs at each of `priorities`.
pub(crate) fn get_counts_per_priority(k: &QueueKeys, priorities: &[u32]) -> ScriptCall {
    ScriptCall::default()
        .key(&k.wait)
        .key(&k.prioritized)
        .arg(priorities)
}

/// `getRanges`: the ids in `range` of each type's set.
pub(crate) fn get_ranges(k: &QueueKeys, types: &[JobType], range: Range) -> ScriptCall {
    let call = ScriptCall::default()
        .key(&k.job_prefix)
        .arg(range.start)
        .arg(range.end)
        .arg(flag(range.asc));
    with_types(types, call)
}

/// `getDependencyCounts`: the size of each of the job's dependency lists in `kinds`.
pub(crate) fn get_dependency_counts(
    k: &QueueKeys,
    job_id: &JobId,
    kinds: &[DependencyKind],
) -> ScriptCall {
    let mut call = ScriptCall::default()
        .key(k.job_key(job_id, ":processed"))
        .key(k.job_key(job_id, ":dependencies"))
        .key(k.job_key(job_id, ":failed"))
        .key(k.job_key(job_id, ":unsuccessful"));
    for kind in kinds {
        call = call.arg(kind.as_str());
    }
    call
}

/// `getMetrics` on `metrics:<kind>` and `metrics:<kind>:data`, data points `start..=end`.
pub(crate) fn get_metrics(k: &QueueKeys, kind: FinishedState, start: i64, end: i64) -> ScriptCall {
    ScriptCall::default()
        .key(k.to_key(&format!("metrics:{}", kind.as_str())))
        .key(k.to_key(&format!("metrics:{}:data", kind.as_str())))
        .arg(start)
        .arg(end)
}

/// `paginate` over the set or hash `key`, items `start..=end` (`end` -1: to the end), resuming
/// the scan at `cursor` with `offset` items of its page already taken; with each member's job
/// hash when `fetch_jobs`.
pub(crate) fn paginate(
    key: &[u8],
    (start, end): (u64, i64),
    cursor: u64,
    offset: u64,
    fetch_jobs: bool,
) -> ScriptCall {
    let call = ScriptCall::default()
        .key(key)
        .arg(start)
        .arg(end)
        .arg(cursor)
        .arg(offset)
        .arg(PAGINATE_MAX_ITERATIONS);
    if fetch_jobs { call.arg(1) } else { call }
}
