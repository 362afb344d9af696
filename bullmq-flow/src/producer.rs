//! [`FlowProducer`]: adds flows atomically and reads them back (Node's `FlowProducer`).

use bullmq_core::telemetry::{metrics, spans};
use std::future::Future;
use std::pin::Pin;
use tracing::Instrument;

use bullmq_core::backend::{Backend, DependenciesQuery, FlowNode};
use bullmq_core::{Error, JobId, Prefix, QueueName, Result, ScriptError};

use crate::tree::{Builder, prefix_of};
use crate::{FlowJob, FlowOptions, GetFlowOptions, JobNode};

/// Adds trees of dependent jobs, spanning queues and prefixes, in one transaction; reads them
/// back with [`get_flow`](Self::get_flow).
///
/// It holds one backend (bound to any queue: each node names its own) and reaches every
/// other queue through [`Lifecycle::for_queue`](bullmq_core::backend::Lifecycle::for_queue), sharing that backend's connections.
pub struct FlowProducer<B> {
    backend: B,
}

impl<B> std::fmt::Debug for FlowProducer<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowProducer").finish_non_exhaustive()
    }
}

type NodeFuture<'a> = Pin<Box<dyn Future<Output = Result<Option<JobNode>>> + Send + 'a>>;

impl<B: Backend> FlowProducer<B> {
    /// A producer writing through `backend`; nodes without a prefix of their own go under
    /// the backend's prefix. The producer writes on a [handle](bullmq_core::backend::Lifecycle::handle) of its
    /// own, so its [`close`](Self::close) leaves `backend` (and its clones) open.
    // Taken by value, as before handles: the producer owns what it is given.
    #[allow(clippy::needless_pass_by_value)]
    pub fn new(backend: B) -> Self {
        Self {
            backend: backend.handle(),
        }
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// Adds a flow: the root and every descendant, or nothing when an option is invalid.
    ///
    /// Jobs without a `jobId` get a random UUID, as Node's. The returned tree carries the
    /// ids the store gave (the existing job's for a duplicate id). A root that could not be
    /// attached to the parent its options name fails the call with the script's error, as in
    /// Node.
    pub async fn add(&self, flow: FlowJob) -> Result<JobNode> {
        self.add_with(flow, &FlowOptions::default()).await
    }

    /// [`add`](Self::add) with per-queue default options.
    pub async fn add_with(&self, flow: FlowJob, opts: &FlowOptions) -> Result<JobNode> {
        let mut trees = self.add_trees(vec![flow], opts, true).await?;
        trees.pop().ok_or(Error::Closed("flow producer"))
    }

    /// Adds several flows in one transaction; every tree is checked before any is written.
    ///
    /// As in Node, a root that the store refused keeps its generated id and no error is
    /// raised for it.
    pub async fn add_bulk(&self, flows: Vec<FlowJob>) -> Result<Vec<JobNode>> {
        self.add_bulk_with(flows, &FlowOptions::default()).await
    }

    /// [`add_bulk`](Self::add_bulk) with per-queue default options (Node's `addBulk` has
    /// none).
    pub async fn add_bulk_with(
        &self,
        flows: Vec<FlowJob>,
        opts: &FlowOptions,
    ) -> Result<Vec<JobNode>> {
        self.add_trees(flows, opts, false).await
    }

    /// [`add_with`](Self::add_with), with the nodes written by `write` instead of the
    /// backend's own `add_flow`: the hook a store's transactional add is built on (see
    /// `bullmq::AddFlowInTransaction` on PostgreSQL). `write` gets the nodes, parents first,
    /// and answers one outcome per node, in order, as `add_flow` does.
    pub(crate) async fn add_via<W, Fut>(
        &self,
        flow: FlowJob,
        opts: &FlowOptions,
        write: W,
    ) -> Result<JobNode>
    where
        W: FnOnce(Vec<FlowNode>) -> Fut,
        Fut: Future<Output = Result<Vec<Result<JobId, ScriptError>>>>,
    {
        let mut trees = self.add_trees_via(vec![flow], opts, true, write).await?;
        trees.pop().ok_or(Error::Closed("flow producer"))
    }

    async fn add_trees(
        &self,
        flows: Vec<FlowJob>,
        opts: &FlowOptions,
        root_errors: bool,
    ) -> Result<Vec<JobNode>> {
        let backend = &self.backend;
        self.add_trees_via(flows, opts, root_errors, |entries| async move {
            backend.add_flow(&entries).await
        })
        .await
    }

    async fn add_trees_via<W, Fut>(
        &self,
        flows: Vec<FlowJob>,
        opts: &FlowOptions,
        root_errors: bool,
        write: W,
    ) -> Result<Vec<JobNode>>
    where
        W: FnOnce(Vec<FlowNode>) -> Fut,
        Fut: Future<Output = Result<Vec<Result<JobId, ScriptError>>>>,
    {
        if self.backend.is_closing() {
            return Err(Error::Closed("flow producer"));
        }
        let mut builder = Builder {
            backend: &self.backend,
            opts,
            now: self.backend.clock().now_ms(),
            entries: Vec::new(),
        };
        let span = match flows.as_slice() {
            [flow] => spans::add_flow(flow.queue.as_str(), &flow.name),
            _ => {
                let names: Vec<&str> = flows.iter().map(|f| f.name.as_str()).collect();
                spans::add_bulk_flows(&names)
            }
        };
        let mut trees = Vec::with_capacity(flows.len());
        for flow in flows {
            trees.push(span.in_scope(|| builder.node(flow, None))?);
        }
        let outcomes = write(builder.entries).instrument(span).await?;
        let mut outcomes = outcomes.into_iter();
        for tree in &mut trees {
            let mut root = true;
            assign_ids(tree, &mut outcomes, &mut root, root_errors)?;
        }
        Ok(trees)
    }

    /// Reads the tree rooted at `query.id`: `None` when that job does not exist. Children come
    /// processed first, then unprocessed, failed and ignored, as in Node; a child whose job
    /// is gone is left out.
    pub async fn get_flow(&self, query: &GetFlowOptions) -> Result<Option<JobNode>> {
        let backend = self.backend.for_queue(&query.queue, query.prefix.as_ref());
        let prefix = match &query.prefix {
            Some(prefix) => prefix.clone(),
            None => prefix_of(&backend)?,
        };
        self.get_node(
            backend,
            query.queue.clone(),
            prefix,
            query.id.clone(),
            query.depth,
            query.max_children,
        )
        .await
    }

    fn get_node(
        &self,
        backend: B,
        queue: QueueName,
        prefix: Prefix,
        id: bullmq_core::JobId,
        depth: u32,
        max_children: u64,
    ) -> NodeFuture<'_> {
        Box::pin(async move {
            let Some(job) = backend.get_job(&id).await? else {
                return Ok(None);
            };
            let mut node = JobNode {
                queue,
                prefix,
                job,
                children: Vec::new(),
            };
            if depth <= 1 {
                return Ok(Some(node));
            }
            let query = DependenciesQuery::first_pages(max_children);
            let deps = backend.get_dependencies(&id, &query).await?;
            let keys = deps
                .processed
                .into_iter()
                .flat_map(|(pairs, _)| pairs.into_iter().map(|(key, _)| key))
                .chain(deps.unprocessed.into_iter().flat_map(|(keys, _)| keys))
                .chain(deps.failed.into_iter().flat_map(|(keys, _)| keys))
                .chain(
                    deps.ignored
                        .into_iter()
                        .flat_map(|(pairs, _)| pairs.into_iter().map(|(key, _)| key)),
                );
            for key in keys {
                let Some(parts) = backend.parse_node_key(&key) else {
                    continue;
                };
                let queue = QueueName::new(parts.queue)?;
                // Stores without key prefixes (PostgreSQL: the schema is the namespace) name
                // none in their keys: the child shares the parent's.
                let prefix = if parts.prefix.is_empty() {
                    node.prefix.clone()
                } else {
                    Prefix::new(parts.prefix)?
                };
                let child = self.backend.for_queue(&queue, Some(&prefix));
                let found = self
                    .get_node(
                        child,
                        queue,
                        prefix,
                        parts.id.into(),
                        depth - 1,
                        max_children,
                    )
                    .await?;
                node.children.extend(found);
            }
            Ok(Some(node))
        })
    }

    /// Closes the backend's connections.
    pub async fn close(&self) -> Result<()> {
        self.backend.close(false).await
    }
}

/// Gives each node of `tree` (in the order its entries were written) the id the store
/// answered; the first root's refusal is an error when `root_errors`.
fn assign_ids<I>(
    tree: &mut JobNode,
    outcomes: &mut I,
    root: &mut bool,
    root_errors: bool,
) -> Result<()>
where
    I: Iterator<Item = std::result::Result<bullmq_core::JobId, bullmq_core::ScriptError>>,
{
    match outcomes.next() {
        Some(Ok(id)) => {
            tree.job.id = id;
            metrics::record_added(tree.queue.as_str(), &tree.job.name, 1);
        }
        Some(Err(e)) if *root && root_errors => return Err(e.into()),
        Some(Err(_)) | None => {}
    }
    *root = false;
    for child in &mut tree.children {
        assign_ids(child, outcomes, root, root_errors)?;
    }
    Ok(())
}
