//! The fixed choices the command line takes (`--output`, `--state`, `--sort`).

// The doc comments here are the `--help` text, where backticks would show as they are.
#![allow(clippy::doc_markdown)]

use clap::ValueEnum;

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

/// A job state, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StateArg {
    Waiting,
    Prioritized,
    Delayed,
    Active,
    Completed,
    Failed,
    WaitingChildren,
}

impl StateArg {
    pub(crate) fn state(self) -> bullmq::JobState {
        use bullmq::JobState as S;
        match self {
            Self::Waiting => S::Waiting,
            Self::Prioritized => S::Prioritized,
            Self::Delayed => S::Delayed,
            Self::Active => S::Active,
            Self::Completed => S::Completed,
            Self::Failed => S::Failed,
            Self::WaitingChildren => S::WaitingChildren,
        }
    }
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
