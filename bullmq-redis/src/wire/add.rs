//! `ARGV[1]` of the add scripts, byte-identical to what Node.js sends.

use bullmq_core::codec::{CodecError, WireMap, WireValue, pack_msgpack};
use bullmq_core::job::ParentRef;

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
