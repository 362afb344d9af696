//! The calls of the `JobMutations` scripts: `updateData`, `updateProgress`, `addLog`,
//! `changeDelay`, `changePriority`, `removeJob`, `removeUnprocessedChildren`,
//! `removeChildDependency` and `removeDeduplicationKey`, keys and arguments in upstream's order.

use std::time::Duration;

use bullmq_core::JobId;

use super::ms;
use crate::keys::QueueKeys;
use crate::script::ScriptCall;

/// `updateData`: `data` (serialized) as the job's data.
pub(crate) fn update_data(keys: &QueueKeys, job_id: &JobId, data: &str) -> ScriptCall {
    ScriptCall::default()
        .key(keys.job_key(job_id, ""))
        .arg(data)
}

/// `updateProgress`: `progress` (serialized) as the job's progress.
pub(crate) fn update_progress(keys: &QueueKeys, job_id: &JobId, progress: &str) -> ScriptCall {
    ScriptCall::default()
        .key(keys.job_key(job_id, ""))
        .key(&keys.events)
        .key(&keys.meta)
        .arg(job_id.as_bytes())
        .arg(progress)
}

/// `addLog`: `row` appended to the job's logs, the newest `keep_logs` kept.
pub(crate) fn add_log(
    keys: &QueueKeys,
    job_id: &JobId,
    row: &str,
    keep_logs: Option<u32>,
) -> ScriptCall {
    // Node.js sends an empty string for "keep all", and 0 is falsy there too.
    let keep = keep_logs
        .filter(|n| *n > 0)
        .map(|n| n.to_string())
        .unwrap_or_default();
    ScriptCall::default()
        .key(keys.job_key(job_id, ""))
        .key(keys.job_key(job_id, ":logs"))
        .arg(job_id.as_bytes())
        .arg(row)
        .arg(keep)
}

/// `changeDelay`: the delayed job due `delay` after `now_ms`.
pub(crate) fn change_delay(
    keys: &QueueKeys,
    job_id: &JobId,
    delay: Duration,
    now_ms: u64,
) -> ScriptCall {
    ScriptCall::default()
        .key(&keys.delayed)
        .key(&keys.meta)
        .key(&keys.marker)
        .key(&keys.events)
        .arg(ms(delay))
        .arg(now_ms)
        .arg(job_id.as_bytes())
        .arg(keys.job_key(job_id, ""))
}

/// `changePriority`: the job at `priority`, last (or first, `lifo`) among its equals.
pub(crate) fn change_priority(
    keys: &QueueKeys,
    job_id: &JobId,
    priority: u32,
    lifo: bool,
) -> ScriptCall {
    ScriptCall::default()
        .key(&keys.wait)
        .key(&keys.paused)
        .key(&keys.meta)
        .key(&keys.prioritized)
        .key(&keys.active)
        .key(&keys.priority_counter)
        .key(&keys.marker)
        .arg(priority)
        .arg(&keys.job_prefix)
        .arg(job_id.as_bytes())
        .arg(u8::from(lifo))
}

/// `removeJob`: the job removed, with its children when `remove_children`.
pub(crate) fn remove_job(keys: &QueueKeys, job_id: &JobId, remove_children: bool) -> ScriptCall {
    ScriptCall::default()
        .key(keys.job_key(job_id, ""))
        .key(&keys.repeat)
        .arg(job_id.as_bytes())
        .arg(u8::from(remove_children))
        .arg(&keys.job_prefix)
}

/// `removeUnprocessedChildren`: the job's children that have not run.
pub(crate) fn remove_unprocessed_children(keys: &QueueKeys, job_id: &JobId) -> ScriptCall {
    ScriptCall::default()
        .key(keys.job_key(job_id, ""))
        .key(&keys.meta)
        .arg(&keys.job_prefix)
        .arg(job_id.as_bytes())
}

/// `removeChildDependency`: the job detached from the parent at `parent_key`.
pub(crate) fn remove_child_dependency(
    keys: &QueueKeys,
    job_id: &JobId,
    parent_key: &str,
) -> ScriptCall {
    ScriptCall::default()
        .key(&keys.job_prefix)
        .arg(keys.job_key(job_id, ""))
        .arg(parent_key)
}

/// `removeDeduplicationKey`: the deduplication key, if `job_id` still holds it.
pub(crate) fn remove_deduplication_key(
    keys: &QueueKeys,
    deduplication_id: &str,
    job_id: &JobId,
) -> ScriptCall {
    ScriptCall::default()
        .key(keys.deduplication(deduplication_id))
        .arg(job_id.as_bytes())
}
