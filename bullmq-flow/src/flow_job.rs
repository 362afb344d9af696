//! [`FlowJob`]: one node of a flow to add, with its children (Node's `FlowJob`).

use bullmq_core::json::JsonPayload;
use bullmq_core::{JobOptions, Prefix, QueueName};

/// A job of a flow and the jobs it waits for.
///
/// A node with children is stored in `waiting-children` and runs once every child has
/// finished; a leaf is added like any job. Children may live in other queues and under other
/// prefixes.
///
/// ```
/// use bullmq_core::{JobOptions, QueueName};
/// use bullmq_flow::FlowJob;
/// use serde_json::json;
///
/// #[derive(serde::Serialize)]
/// struct Step { n: u32 }
///
/// let q = QueueName::new("steps")?;
/// let flow = FlowJob::new(q.clone(), "all", json!({}))
///     .child(FlowJob::new(q.clone(), "one", Step { n: 1 }))
///     .child(FlowJob::new(q, "two", json!({"n": 2})).opts(JobOptions::new().attempts(3)));
/// assert_eq!(flow.children.len(), 2);
/// # Ok::<(), bullmq_core::options::ValidationError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FlowJob {
    /// The queue the job is added to.
    pub queue: QueueName,
    /// The job's name.
    pub name: String,
    /// Its data, serialized as `JSON.stringify` writes it.
    pub data: JsonPayload,
    /// The key prefix of its queue; the producer's own when `None` (as Node, a child does not
    /// inherit its parent's prefix).
    pub prefix: Option<Prefix>,
    /// Its options. A child's `parent` is set by the producer; a root's `parent` attaches the
    /// whole flow to an existing job.
    pub opts: JobOptions,
    /// The jobs it waits for.
    pub children: Vec<FlowJob>,
    /// Whether the node is written as Node's `FlowJob` without an `opts` key
    /// ([`without_opts`](Self::without_opts)): Node then stores no trace context for it, so
    /// its attempts continue no producer's trace. False for [`new`](Self::new), which is
    /// Node's node with options (`opts: {}` at least), whose job carries its `addNode`
    /// span's context.
    pub without_opts: bool,
}

impl FlowJob {
    /// A job named `name` in `queue` with `data` (any `Serialize` value, or a reference to
    /// one; a [`RawValue`](serde_json::value::RawValue) is stored as given), no options and no
    /// children. Data that cannot be serialized is reported when the flow is added.
    ///
    /// Data parsed from text needs its type named, since any type would do here:
    /// `serde_json::from_str::<serde_json::Value>(text)?` (a bare `serde_json::from_str(text)?`
    /// fails to compile with ``the trait `Serialize` is not implemented for `!` ``).
    #[must_use]
    pub fn new(queue: QueueName, name: impl Into<String>, data: impl serde::Serialize) -> Self {
        Self {
            queue,
            name: name.into(),
            data: JsonPayload::new(data),
            prefix: None,
            opts: JobOptions::new(),
            children: Vec::new(),
            without_opts: false,
        }
    }

    /// Sets the job's options.
    #[must_use]
    pub fn opts(mut self, opts: JobOptions) -> Self {
        self.opts = opts;
        self.without_opts = false;
        self
    }

    /// Makes the node one without options, as Node's `FlowJob` whose `opts` key is absent:
    /// the queue's default options apply, and, as in Node, its job carries no trace context
    /// (no `tm`), whatever the `addNode` span.
    ///
    /// ```
    /// use bullmq_core::QueueName;
    /// use bullmq_flow::FlowJob;
    ///
    /// let node = FlowJob::new(QueueName::new("steps")?, "bare", serde_json::json!({})).without_opts();
    /// assert!(node.without_opts);
    /// # Ok::<(), bullmq_core::options::ValidationError>(())
    /// ```
    #[must_use]
    pub fn without_opts(mut self) -> Self {
        self.opts = JobOptions::new();
        self.without_opts = true;
        self
    }

    /// Puts the job under another key prefix.
    #[must_use]
    pub fn prefix(mut self, prefix: Prefix) -> Self {
        self.prefix = Some(prefix);
        self
    }

    /// Adds one child.
    #[must_use]
    pub fn child(mut self, child: FlowJob) -> Self {
        self.children.push(child);
        self
    }

    /// Adds several children.
    #[must_use]
    pub fn children(mut self, children: impl IntoIterator<Item = FlowJob>) -> Self {
        self.children.extend(children);
        self
    }
}
