//! What Redis Cluster asks of a queue's keys: one hash tag for all of them, so that every
//! script of the queue runs on one node, and flows only among queues whose keys share a slot.

use bullmq_core::backend::{FlowNode, ParentKeyOpts};
use bullmq_core::options::ValidationError;
use bullmq_core::{Job, Prefix, QueueName, Result};

use crate::connection::{hash_tag, slot};
use crate::keys::QueueKeys;

/// The slot of every key of `queue` under `prefix`; refused when the qualified name
/// `<prefix>:<queue>` holds no non-empty hash tag, since upstream's scripts touch several
/// keys of the queue at once and a cluster runs a script only if all its keys share a slot.
pub(crate) fn queue_slot(prefix: &Prefix, queue: &QueueName) -> Result<u16> {
    let keys = QueueKeys::new(prefix, queue);
    let name = keys.qualified_name.as_bytes();
    // A tag closed within `<prefix>:<queue>` is the first tag of every key of the queue.
    if hash_tag(name).is_none() {
        return Err(ValidationError::single(
            "redis cluster keys",
            "prefix",
            format!(
                "the keys of queue `{queue}` under prefix `{prefix}` have no hash tag, so a \
                 cluster would spread them over slots and refuse the queue's scripts \
                 (CROSSSLOT); put a hash tag in the prefix, `{{{prefix}}}` (every queue of \
                 the prefix on one node), or in the queue name, `{{{queue}}}` (each queue on \
                 the node of its own slot)"
            ),
        )
        .into());
    }
    Ok(slot(name))
}

/// The one slot of a flow's jobs and of the parents they name; refused when they are in more
/// than one: the whole flow is added in one transaction, which a cluster runs only within one
/// slot. `None` for an empty flow.
pub(crate) fn flow_slot(nodes: &[FlowNode]) -> Result<Option<u16>> {
    let Some(first) = nodes.first() else {
        return Ok(None);
    };
    let slot_of_flow = slot(
        QueueKeys::new(&first.prefix, &first.queue)
            .qualified_name
            .as_bytes(),
    );
    for node in nodes {
        let keys = QueueKeys::new(&node.prefix, &node.queue);
        let parent = node.entry.parent.parent_key.as_deref();
        let elsewhere = std::iter::once(keys.qualified_name.as_str())
            .chain(parent)
            .find(|key| slot(key.as_bytes()) != slot_of_flow);
        if let Some(key) = elsewhere {
            return Err(ValidationError::single(
                "flow on a redis cluster",
                "queue",
                format!(
                    "`{key}` is in another cluster slot than the flow's root queue: a flow is \
                     added in one transaction, which a cluster runs only within one slot; give \
                     every queue of the flow the same hash tag (for example the prefix \
                     `{{myprefix}}`)"
                ),
            )
            .into());
        }
    }
    Ok(Some(slot_of_flow))
}

/// Refuses a job whose parent is in another slot than its queue: the add script also writes
/// the parent's keys, which a cluster allows only within the slot the script runs in (the
/// script would stop on an opaque "non local key" error instead).
pub(crate) fn check_parent_slot(keys: &QueueKeys, job: &Job, parent: &ParentKeyOpts) -> Result<()> {
    let queue_slot = slot(keys.qualified_name.as_bytes());
    let parent_keys = [
        parent.parent_key.as_deref().or(job.parent_key.as_deref()),
        parent.parent_dependencies_key.as_deref(),
    ];
    match parent_keys
        .into_iter()
        .flatten()
        .find(|key| slot(key.as_bytes()) != queue_slot)
    {
        None => Ok(()),
        Some(key) => Err(ValidationError::single(
            "job on a redis cluster",
            "parent",
            format!(
                "the parent `{key}` is in another cluster slot than queue `{}`: a child is \
                 added together with its parent's dependencies, which a cluster does only \
                 within one slot; give the parent's queue and the child's the same hash tag \
                 (for example the prefix `{{myprefix}}`)",
                keys.qualified_name
            ),
        )
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use bullmq_core::{Prefix, QueueName};

    use super::queue_slot;

    #[test]
    fn untagged_queues_are_refused_with_the_fix() {
        let q = |s: &str| QueueName::new(s).expect("valid");
        let p = |s: &str| Prefix::new(s).expect("valid");
        let refused = queue_slot(&p("bull"), &q("mail")).expect_err("no tag");
        let message = refused.to_string();
        assert!(
            message.contains("`{bull}`") && message.contains("`{mail}`"),
            "{message}"
        );
        assert!(queue_slot(&p("bull{}"), &q("mail")).is_err());
        let by_prefix = queue_slot(&p("{bull}"), &q("mail")).expect("tagged");
        assert_eq!(
            by_prefix,
            queue_slot(&p("{bull}"), &q("other")).expect("tagged")
        );
        assert!(queue_slot(&p("bull"), &q("{mail}")).is_ok());
    }
}
