//! The add scripts' `KEYS` (which script a job goes through, as upstream routes it) and
//! `ARGV[1]`, byte-identical to what Node.js sends, and the call of
//! `releaseParentIfNoPendingDependencies` that ends adding a flow.

use bullmq_core::Job;
use bullmq_core::codec::{CodecError, WireMap, WireValue, pack_msgpack};
use bullmq_core::job::ParentRef;

use crate::keys::QueueKeys;
use crate::script::ScriptCall;
use crate::scripts::{self, LuaScript};

/// The add script `job` goes through and its `KEYS`, borrowed from the queue's keys:
/// `addParentJob` for a parent added to wait for its children, else by the job's options.
pub(crate) fn add_script<'a>(
    keys: &'a QueueKeys,
    job: &Job,
    to_waiting_children: bool,
) -> (&'static LuaScript, Vec<&'a str>) {
    if to_waiting_children {
        let keys = vec![
            keys.meta.as_str(),
            &keys.id,
            &keys.delayed,
            &keys.waiting_children,
            &keys.completed,
            &keys.events,
        ];
        (&scripts::ADD_PARENT_JOB, keys)
    } else if job.opts.is_delayed() {
        let keys = vec![
            keys.marker.as_str(),
            &keys.meta,
            &keys.id,
            &keys.delayed,
            &keys.completed,
            &keys.events,
        ];
        (&scripts::ADD_DELAYED_JOB, keys)
    } else if job.opts.is_prioritized() {
        let keys = vec![
            keys.marker.as_str(),
            &keys.meta,
            &keys.id,
            &keys.prioritized,
            &keys.delayed,
            &keys.completed,
            &keys.active,
            &keys.events,
            &keys.priority_counter,
        ];
        (&scripts::ADD_PRIORITIZED_JOB, keys)
    } else {
        let keys = vec![
            keys.wait.as_str(),
            &keys.paused,
            &keys.meta,
            &keys.id,
            &keys.completed,
            &keys.delayed,
            &keys.active,
            &keys.events,
            &keys.marker,
        ];
        (&scripts::ADD_STANDARD_JOB, keys)
    }
}

/// `releaseParentIfNoPendingDependencies`: the parent at `parent_key` leaves waiting-children
/// at `now_ms` if none of its children is pending.
pub(crate) fn release_parent_if_no_pending_dependencies(
    parent_key: &str,
    parent: &ParentRef,
    now_ms: u64,
) -> ScriptCall {
    ScriptCall::default()
        .key(parent_key)
        .key(format!("{parent_key}:dependencies"))
        .arg(&parent.queue_key)
        .arg(parent.id.as_deref().unwrap_or_default())
        .arg(now_ms)
}

/// `ARGV[1]` of the add scripts (`addStandardJob`, `addDelayedJob`, `addPrioritizedJob`,
/// `addParentJob`): a msgpack array of ten entries, absent ones as nil.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AddJobArgs<'a> {
    /// The queue's job key prefix, `<prefix>:<queue>:`.
    pub(crate) key_prefix: &'a str,
    /// The custom job id, or `""` to have one generated.
    pub(crate) custom_id: &'a str,
    /// The job's name.
    pub(crate) name: &'a str,
    /// The job's timestamp, Unix ms.
    pub(crate) timestamp: u64,
    /// The parent's job key.
    pub(crate) parent_key: Option<&'a str>,
    /// The parent's dependencies set.
    pub(crate) parent_dependencies_key: Option<&'a str>,
    /// The parent reference stored in the child's `parent` field.
    pub(crate) parent: Option<&'a ParentRef>,
    /// The id of the scheduler that produced the job.
    pub(crate) repeat_job_key: Option<&'a str>,
    /// The deduplication key, `<prefix>:<queue>:de:<id>`.
    pub(crate) deduplication_key: Option<&'a str>,
    /// Leave the parent for the flow's final release check (6.7).
    pub(crate) defer_parent_release: bool,
}

fn parent_ref(p: &ParentRef) -> WireValue<'_> {
    let mut m = WireMap::default();
    m.push("id", p.id.as_deref().map(WireValue::text));
    m.push("queueKey", WireValue::text(&p.queue_key));
    m.push("fpof", p.fpof.map(WireValue::Bool));
    m.push("rdof", p.rdof.map(WireValue::Bool));
    m.push("idof", p.idof.map(WireValue::Bool));
    m.push("cpof", p.cpof.map(WireValue::Bool));
    WireValue::Map(m)
}

/// Packs `ARGV[1]` of the add scripts.
pub(crate) fn pack_add_job_args(args: &AddJobArgs<'_>) -> Result<Vec<u8>, CodecError> {
    let items = vec![
        WireValue::text(args.key_prefix),
        WireValue::text(args.custom_id),
        WireValue::text(args.name),
        WireValue::UInt(args.timestamp),
        WireValue::or_nil(args.parent_key.map(WireValue::text)),
        WireValue::or_nil(args.parent_dependencies_key.map(WireValue::text)),
        WireValue::or_nil(args.parent.map(parent_ref)),
        WireValue::or_nil(args.repeat_job_key.map(WireValue::text)),
        WireValue::or_nil(args.deduplication_key.map(WireValue::text)),
        if args.defer_parent_release {
            WireValue::UInt(1)
        } else {
            WireValue::Null
        },
    ];
    pack_msgpack("add-job arguments", &WireValue::Array(items))
}
