//! The fixed choices the command line takes (`--output`, `--state`, `--sort`).

// The doc comments here are the `--help` text, where backticks would show as they are.
#![allow(clippy::doc_markdown)]

use bullmq::JobState;
use clap::ValueEnum;
use clap::builder::{PossibleValuesParser, TypedValueParser};

/// How results are written on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Tables and sentences for people.
    Text,
    /// One JSON document.
    Json,
    /// One JSON object per line.
    Jsonl,
}

/// `--state`'s parser: a job state by upstream's name (the names --help and the completions
/// list), read by the library's own parser.
pub(crate) fn job_state() -> impl TypedValueParser<Value = JobState> {
    PossibleValuesParser::new(JobState::ALL.map(JobState::as_str))
        .try_map(|name| name.parse::<JobState>())
}

/// A finished state, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Finished {
    Failed,
    Completed,
}

impl Finished {
    pub(crate) fn state(self) -> bullmq::job::FinishedState {
        match self {
            Self::Failed => bullmq::job::FinishedState::Failed,
            Self::Completed => bullmq::job::FinishedState::Completed,
        }
    }
}

/// A sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Sort {
    Asc,
    Desc,
}
