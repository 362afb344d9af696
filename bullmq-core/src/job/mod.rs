//! The job as stored: every field of upstream's job hash, typed.

mod id;
mod listed;
mod state;

use std::time::Duration;

use serde::de::DeserializeOwned;

pub use id::JobId;
pub use listed::sort_listed;
pub use state::{FinishedState, JobState, JobType, UnknownState};

use crate::options::{InvalidOption, JobOptions};

/// A job read from (or about to be written to) the datastore: Node.js BullMQ's `JobJson`, with
/// every field of the Redis job hash.
///
/// `data` and `return_value` are kept as the JSON text that was stored, so a job passed through
/// Rust keeps its bytes; [`data_as`](Self::data_as) and [`return_value_as`](Self::return_value_as)
/// give them back typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The job id (`<prefix>:<queue>:<id>` is its key).
    pub id: JobId,
    /// `name`.
    pub name: String,
    /// `data`: the payload as JSON text.
    pub data: String,
    /// `opts`, decoded; options that could not be read are listed in `invalid_opts` and kept
    /// verbatim in `opts.extra`.
    pub opts: JobOptions,
    /// Stored options that were present but malformed.
    pub invalid_opts: Vec<InvalidOption>,
    /// `timestamp`: when the job was added, Unix ms.
    pub timestamp: u64,
    /// `delay`.
    pub delay: Duration,
    /// `priority` (0 = none). Signed: Node.js stores a negative priority unchecked.
    pub priority: i64,
    /// `processedOn`: when the last attempt started, Unix ms.
    pub processed_on: Option<u64>,
    /// `finishedOn`: when the job completed or failed, Unix ms.
    pub finished_on: Option<u64>,
    /// `returnvalue` as JSON text.
    pub return_value: Option<String>,
    /// `failedReason`: the error message, as raw text.
    pub failed_reason: Option<String>,
    /// `stacktrace`: one entry per failed attempt (stored as a JSON array of strings).
    pub stacktrace: Vec<String>,
    /// `atm` (or the legacy `attemptsMade`): attempts that finished.
    pub attempts_made: u32,
    /// `ats`: attempts that started.
    pub attempts_started: u32,
    /// `stc`: times the job was found stalled.
    pub stalled_counter: u32,
    /// `pb`: name of the worker that processed it.
    pub processed_by: Option<String>,
    /// `progress` (a number or any JSON value; 0 when never set).
    pub progress: serde_json::Value,
    /// `parentKey`: the parent's job key, for a child in a flow.
    pub parent_key: Option<String>,
    /// `parent`: the parent reference with its failure policy.
    pub parent: Option<ParentRef>,
    /// `rjk`: the id of the job scheduler that produced the job.
    pub repeat_job_key: Option<String>,
    /// `deid`: the deduplication id.
    pub deduplication_id: Option<String>,
    /// `defa`: a failure recorded for the worker to apply (stalled too often, failed child).
    pub deferred_failure: Option<String>,
    /// `tm`: telemetry propagation metadata.
    pub telemetry_metadata: Option<String>,
}

/// The `parent` field of a child job: `{id, queueKey, fpof?, cpof?, idof?, rdof?}`.
///
/// The Lua scripts read a child's failure policy from here, not from its options.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ParentRef {
    /// The parent's job id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The parent queue's qualified name (`<prefix>:<queue>`).
    #[serde(rename = "queueKey")]
    pub queue_key: String,
    /// failParentOnFailure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fpof: Option<bool>,
    /// removeDependencyOnFailure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdof: Option<bool>,
    /// ignoreDependencyOnFailure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idof: Option<bool>,
    /// continueParentOnFailure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpof: Option<bool>,
}

/// A stored job that could not be read; names the job and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("job {job_id}: field `{field}`: {reason}")]
pub struct JobDecodeError {
    /// The job that was being read.
    pub job_id: String,
    /// The hash field at fault.
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl Job {
    /// A new job as `add` stores it, before the datastore assigns an id.
    #[must_use]
    pub fn new(name: impl Into<String>, data: String, opts: JobOptions, timestamp: u64) -> Self {
        let parent = opts.parent.as_ref().map(|p| ParentRef {
            id: Some(p.id.clone()),
            queue_key: p.queue.clone(),
            fpof: opts.fail_parent_on_failure.filter(|b| *b),
            rdof: opts.remove_dependency_on_failure.filter(|b| *b),
            idof: opts.ignore_dependency_on_failure.filter(|b| *b),
            cpof: opts.continue_parent_on_failure.filter(|b| *b),
        });
        Self {
            id: opts.job_id.clone().unwrap_or_else(|| JobId::from("")),
            name: name.into(),
            data,
            timestamp: opts.timestamp.unwrap_or(timestamp),
            delay: opts.delay.unwrap_or_default(),
            priority: i64::from(opts.priority.unwrap_or(0)),
            parent_key: opts.parent.as_ref().map(crate::options::ParentOptions::key),
            parent,
            deduplication_id: opts
                .deduplication
                .as_ref()
                .map(|d| d.id.clone())
                .filter(|id| !id.is_empty()),
            telemetry_metadata: None,
            opts,
            invalid_opts: Vec::new(),
            processed_on: None,
            finished_on: None,
            return_value: None,
            failed_reason: None,
            stacktrace: Vec::new(),
            attempts_made: 0,
            attempts_started: 0,
            stalled_counter: 0,
            processed_by: None,
            progress: serde_json::Value::from(0),
            repeat_job_key: None,
            deferred_failure: None,
        }
    }

    /// The payload, deserialized.
    pub fn data_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.data)
    }

    /// The return value, deserialized; `None` until the job completes.
    pub fn return_value_as<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        self.return_value.as_deref().map(serde_json::from_str)
    }
}
