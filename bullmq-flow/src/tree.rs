//! Turning a [`FlowJob`] tree into the backend's flat list of [`FlowNode`]s, parents before
//! children, checking every node first (upstream: `FlowProducer#addNode`, `validateFlowJobs`,
//! `Job#validateOptions`).

use bullmq_core::backend::{FlowNode, Lifecycle, NewJob, ParentKeyOpts};
use bullmq_core::options::{ParentOptions, ValidationError};
use bullmq_core::telemetry::{context, spans};
use bullmq_core::{Job, JobId, Prefix, Result};

use crate::{FlowJob, FlowOptions, JobNode};

/// Where a node hangs: its parent's reference and dependencies key.
pub(crate) struct Attach {
    pub(crate) parent: ParentOptions,
    pub(crate) dependencies_key: String,
}

/// Collects the flat entries of one or more trees.
pub(crate) struct Builder<'a, B> {
    pub(crate) backend: &'a B,
    pub(crate) opts: &'a FlowOptions,
    pub(crate) now: u64,
    pub(crate) entries: Vec<FlowNode>,
}

impl<B: Lifecycle> Builder<'_, B> {
    /// Adds `flow` (a root when `attach` is `None`) and its descendants to the entries, and
    /// returns the tree of jobs as they will be stored.
    pub(crate) fn node(&mut self, flow: FlowJob, attach: Option<Attach>) -> Result<JobNode> {
        // Each node its own `addNode` span, its children's nested in it, its `tm` its span's
        // context (Node's `FlowProducer#addNode`).
        let has_children = !flow.children.is_empty();
        let sibling = self.backend.for_queue(&flow.queue, flow.prefix.as_ref());
        let prefix = match flow.prefix.clone() {
            Some(prefix) => prefix,
            None => prefix_of(&sibling)?,
        };
        // Node takes the id from the node's own options only, never from queue defaults.
        let id = flow
            .opts
            .job_id
            .clone()
            .filter(|id| !id.as_str().is_empty())
            .unwrap_or_else(|| JobId::from(uuid::Uuid::new_v4().to_string()));
        let span = spans::add_node(flow.queue.as_str(), &flow.name, id.as_str());
        let _in = span.enter();
        let mut opts = match self.opts.defaults_for(&flow.queue) {
            Some(defaults) => flow.opts.or(defaults),
            None => flow.opts,
        };
        let mut dependencies_key = opts
            .parent
            .as_ref()
            .map(|p| format!("{}:dependencies", p.key()));
        if let Some(attach) = attach {
            opts.parent = Some(attach.parent);
            dependencies_key = Some(attach.dependencies_key);
        }
        if has_children && opts.deduplication.is_some() {
            return Err(invalid(
                &flow.queue,
                &flow.name,
                "cannot be used on a flow node with children",
            ));
        }
        // Node carries the span's context only into a node given options.
        if flow.without_opts {
            opts.telemetry = None;
        } else {
            context::apply_to_child(&span, &mut opts);
        }
        opts.validate()
            .map_err(|e| in_node(&flow.name, &flow.queue, e))?;
        let data = flow.data.text("job data")?.to_owned();
        opts.check_data_size(&flow.name, &data)
            .map_err(|e| in_node(&flow.name, &flow.queue, e))?;
        let mut job = Job::new(flow.name, data, opts.with_node_defaults(), self.now);
        job.id = id.clone();
        let parent = ParentKeyOpts {
            parent_key: job.parent_key.clone(),
            parent_dependencies_key: dependencies_key,
            add_to_waiting_children: has_children,
            defer_parent_release: true,
        };
        self.entries.push(FlowNode {
            entry: NewJob {
                job: job.clone(),
                parent,
            },
            queue: flow.queue.clone(),
            prefix: prefix.clone(),
        });
        let mut children = Vec::with_capacity(flow.children.len());
        for child in flow.children {
            let attach = Attach {
                parent: ParentOptions::new(id.as_str(), sibling.qualified_name()),
                dependencies_key: format!("{}:dependencies", sibling.to_key(id.as_str())),
            };
            children.push(self.node(child, Some(attach))?);
        }
        Ok(JobNode {
            queue: flow.queue,
            prefix,
            job,
            children,
        })
    }
}

/// The key prefix a backend bound to a queue writes under.
pub(crate) fn prefix_of<B: Lifecycle>(backend: &B) -> Result<Prefix> {
    match backend.parse_node_key(&backend.to_key("0")) {
        Some(key) if !key.prefix.is_empty() => Ok(Prefix::new(key.prefix)?),
        _ => Ok(Prefix::default()),
    }
}

fn invalid(queue: &bullmq_core::QueueName, name: &str, message: &str) -> bullmq_core::Error {
    ValidationError::single(
        "flow",
        "deduplication",
        format!("{message} (job {name:?} of queue {})", queue.as_str()),
    )
    .into()
}

/// Names the node a rejected option belongs to, keeping the field paths.
fn in_node(name: &str, queue: &bullmq_core::QueueName, err: ValidationError) -> bullmq_core::Error {
    let Some((first, rest)) = err.problems().split_first() else {
        return err.into();
    };
    let mut message = first.message.clone();
    for p in rest {
        message = format!("{message}; {}: {}", p.path, p.message);
    }
    ValidationError::single(
        "flow",
        &first.path,
        format!("{message} (job {:?} of queue {})", name, queue.as_str()),
    )
    .into()
}
