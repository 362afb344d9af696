//! Options of one `add` (Node's `FlowOpts`) and of `get_flow` (Node's `NodeOpts`).

use std::collections::BTreeMap;

use bullmq_core::{JobId, JobOptions, Prefix, QueueName};

/// Options of [`FlowProducer::add_with`](crate::FlowProducer::add_with) (Node's `FlowOpts`).
///
/// ```
/// use bullmq_core::{JobOptions, QueueName};
/// use bullmq_flow::FlowOptions;
///
/// let opts = FlowOptions::new()
///     .queue_defaults(&QueueName::new("renders")?, JobOptions::new().attempts(3));
/// # Ok::<(), bullmq_core::options::ValidationError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowOptions {
    /// Default job options per queue name (Node's `queuesOptions[queue].defaultJobOptions`);
    /// a node's own options win, field by field.
    pub queues_options: BTreeMap<String, JobOptions>,
}

impl FlowOptions {
    /// No defaults.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Default options for the jobs of `queue` (whatever their prefix, as in Node).
    #[must_use]
    pub fn queue_defaults(mut self, queue: &QueueName, defaults: JobOptions) -> Self {
        self.queues_options
            .insert(queue.as_str().to_owned(), defaults);
        self
    }

    pub(crate) fn defaults_for(&self, queue: &QueueName) -> Option<&JobOptions> {
        self.queues_options.get(queue.as_str())
    }
}

/// Which tree [`FlowProducer::get_flow`](crate::FlowProducer::get_flow) reads (Node's
/// `NodeOpts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetFlowOptions {
    /// The root job's id.
    pub id: JobId,
    /// The root job's queue.
    pub queue: QueueName,
    /// The root queue's prefix; the producer's own when `None`.
    pub prefix: Option<Prefix>,
    /// Levels to read, the root counting as one (Node's default: 10). With 1 only the root
    /// is read.
    pub depth: u32,
    /// At most this many children per dependency list (processed, unprocessed, failed,
    /// ignored) of each node (Node's default: 20; Redis treats it as a `SCAN` hint for
    /// the hash and set lists).
    pub max_children: u64,
}

impl GetFlowOptions {
    /// The tree rooted at job `id` of `queue`, with Node's defaults (depth 10, 20 children).
    #[must_use]
    pub fn new(queue: QueueName, id: impl Into<JobId>) -> Self {
        Self {
            id: id.into(),
            queue,
            prefix: None,
            depth: 10,
            max_children: 20,
        }
    }

    /// Reads the root from another prefix.
    #[must_use]
    pub fn prefix(mut self, prefix: Prefix) -> Self {
        self.prefix = Some(prefix);
        self
    }

    /// Sets the depth.
    #[must_use]
    pub fn depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    /// Sets the most children read per list.
    #[must_use]
    pub fn max_children(mut self, max_children: u64) -> Self {
        self.max_children = max_children;
        self
    }
}
