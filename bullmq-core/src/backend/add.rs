//! Adding jobs: one, many, or a whole flow.

use std::future::Future;

use crate::{Job, JobId, Prefix, QueueName, Result, ScriptError};

/// Where a new job hangs in a flow (upstream: `ParentKeyOpts`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParentKeyOpts {
    /// The parent's job key, when the new job is a child.
    pub parent_key: Option<String>,
    /// The parent's `…:dependencies` set, when the new job is a child.
    pub parent_dependencies_key: Option<String>,
    /// Put the new job in `waiting-children` (it is a parent whose children follow).
    pub add_to_waiting_children: bool,
    /// If the child already exists and has completed, only record it as processed and leave
    /// the parent for the flow's final release check (6.7).
    pub defer_parent_release: bool,
}

impl ParentKeyOpts {
    /// The flow position `Queue::add` gives `job`: a child of its `parent` option, if any.
    #[must_use]
    pub fn of(job: &Job) -> Self {
        Self {
            parent_dependencies_key: job.parent_key.as_ref().map(|k| format!("{k}:dependencies")),
            parent_key: job.parent_key.clone(),
            ..Self::default()
        }
    }
}

/// One job of [`AddJobs::add_jobs`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// The job; an empty `id` asks the store for the next generated one.
    pub job: Job,
    /// Its place in a flow, if any.
    pub parent: ParentKeyOpts,
}

/// One node of [`AddJobs::add_flow`], which may live in any queue and prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowNode {
    /// The job and its place in the tree.
    pub entry: NewJob,
    /// The node's queue.
    pub queue: QueueName,
    /// The node's key prefix.
    pub prefix: Prefix,
}

/// Adding jobs (upstream: `addJob`, `addJobs`, `addFlow`).
pub trait AddJobs: Send + Sync {
    /// Adds one job, routed to wait, prioritized, delayed or waiting-children by its options;
    /// returns its id (the existing one for a duplicate or deduplicated job).
    fn add_job(
        &self,
        job: &Job,
        parent: &ParentKeyOpts,
    ) -> impl Future<Output = Result<JobId>> + Send;

    /// Adds many independent jobs in one round trip; ids come back in input order.
    ///
    /// Not atomic, as upstream's `addJobs` is not: each job is added on its own, and a job
    /// the store refuses (a missing parent, a parent that cannot be replaced) does not stop
    /// the others. Implementations must then answer
    /// [`Error::Bulk`](crate::Error::Bulk): the jobs added (index and id), the jobs refused
    /// (index and the error adding that job alone gives), and the jobs whose outcome is not
    /// known because the answer was lost, so that a retry of the rest adds nothing twice.
    /// A job found unfit before anything is sent (not encodable, too large for the server:
    /// [`PayloadTooLarge`](crate::error::PayloadTooLarge)) is reported the same way with
    /// nothing written. Any other error means nothing of the bulk was written (except a
    /// replication shortfall, whose error names the ids written).
    ///
    /// On Redis the jobs are pipelined script calls (no `MULTI`, as upstream); on PostgreSQL
    /// one statement, in which a refused job is skipped and the others are added, and which
    /// writes nothing when it fails as a whole (then the refusal has no index).
    fn add_jobs(&self, jobs: &[NewJob]) -> impl Future<Output = Result<Vec<JobId>>> + Send;

    /// Adds a flow atomically, parents before children; one outcome per node, in input order.
    fn add_flow(
        &self,
        nodes: &[FlowNode],
    ) -> impl Future<Output = Result<Vec<Result<JobId, ScriptError>>>> + Send;
}
