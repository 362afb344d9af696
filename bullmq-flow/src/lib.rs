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
