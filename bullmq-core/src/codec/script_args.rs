//! Packed arguments of upstream's Lua scripts, byte-identical to what Node.js sends.

use super::CodecError;
use super::msgpack;
use super::wire::{WireMap, WireValue};
use crate::job::ParentRef;

/// `ARGV[1]` of the add scripts (`addStandardJob`, `addDelayedJob`, `addPrioritizedJob`,
/// `addParentJob`): a msgpack array of ten entries, absent ones as nil.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddJobArgs<'a> {
    /// The queue's job key prefix, `<prefix>:<queue>:`.
    pub key_prefix: &'a str,
    /// The custom job id, or `""` to have one generated.
    pub custom_id: &'a str,
    /// The job's name.
    pub name: &'a str,
    /// The job's timestamp, Unix ms.
    pub timestamp: u64,
    /// The parent's job key.
    pub parent_key: Option<&'a str>,
    /// The parent's dependencies set.
    pub parent_dependencies_key: Option<&'a str>,
    /// The parent reference stored in the child's `parent` field.
    pub parent: Option<&'a ParentRef>,
    /// The id of the scheduler that produced the job.
    pub repeat_job_key: Option<&'a str>,
    /// The deduplication key, `<prefix>:<queue>:de:<id>`.
    pub deduplication_key: Option<&'a str>,
    /// Leave the parent for the flow's final release check (6.7).
    pub defer_parent_release: bool,
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
pub fn pack_add_job_args(args: &AddJobArgs<'_>) -> Result<Vec<u8>, CodecError> {
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
    let mut out = Vec::with_capacity(64);
    msgpack::value(&mut out, &WireValue::Array(items)).map_err(|e| CodecError::Encode {
        what: "add-job arguments",
        reason: e.to_string(),
    })?;
    Ok(out)
}
