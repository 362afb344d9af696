//! [`JobNode`]: a job of a flow as added or read back, with its children (Node's `JobNode`).

use bullmq_core::{Job, Prefix, QueueName};

/// A job of a flow and its children, as [`FlowProducer::add`](crate::FlowProducer::add) added
/// it or [`FlowProducer::get_flow`](crate::FlowProducer::get_flow) read it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobNode {
    /// The job's queue.
    pub queue: QueueName,
    /// The key prefix of its queue.
    pub prefix: Prefix,
    /// The job.
    pub job: Job,
    /// Its children; empty for a leaf, and for a node read past the requested depth.
    pub children: Vec<JobNode>,
}

impl JobNode {
    /// This node and every descendant, parents before children.
    pub fn iter(&self) -> impl Iterator<Item = &JobNode> {
        let mut stack = vec![self];
        std::iter::from_fn(move || {
            let node = stack.pop()?;
            stack.extend(node.children.iter().rev());
            Some(node)
        })
    }
}
