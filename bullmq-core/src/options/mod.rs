//! Typed options, validated before anything is written.
//!
//! The wire shape (short keys, number encoding) lives in [`crate::codec`]; this module only
//! knows what the options mean.

mod backoff;
mod dedup;
mod invalid;
mod job;
mod keep_jobs;
mod key_order;
mod parent;
mod repeat;
mod unix_millis;
mod validation;

pub use backoff::{Backoff, BackoffStrategy};
pub use dedup::Deduplication;
pub use invalid::InvalidOption;
pub use job::{JobOptions, PRIORITY_LIMIT};
pub use keep_jobs::KeepJobs;
pub use key_order::KeyOrder;
pub use parent::{ParentOptions, Telemetry};
pub use repeat::RepeatOptions;
pub use unix_millis::{InvalidInstant, UnixMillis};
pub use validation::{Problem, ValidationError};
