#![doc = include_str!("lib.md")]
#![forbid(unsafe_code)]

mod flow_job;
mod job_node;
mod options;
mod producer;
mod tree;

pub use flow_job::FlowJob;
pub use job_node::JobNode;
pub use options::{FlowOptions, GetFlowOptions};
pub use producer::FlowProducer;

/// Internals the `bullmq` facade reaches: not part of the API, not covered by semver, and
/// free to change in any release.
#[doc(hidden)]
pub mod __private {
    use std::future::Future;

    use bullmq_core::backend::{Backend, FlowNode};
    use bullmq_core::{JobId, Result, ScriptError};

    use crate::{FlowJob, FlowOptions, FlowProducer, JobNode};

    /// `FlowProducer::add_with`, with the nodes written by `write` instead of the backend's
    /// own `add_flow`: what the facade's transactional add on PostgreSQL is built on.
    pub async fn add_flow_via<B, W, Fut>(
        producer: &FlowProducer<B>,
        flow: FlowJob,
        opts: &FlowOptions,
        write: W,
    ) -> Result<JobNode>
    where
        B: Backend,
        W: FnOnce(Vec<FlowNode>) -> Fut,
        Fut: Future<Output = Result<Vec<Result<JobId, ScriptError>>>>,
    {
        producer.add_via(flow, opts, write).await
    }
}
