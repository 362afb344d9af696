//! The inputs of the commands that read, add or change jobs.

// The doc comments here are the `--help` text, where backticks would show as they are.
#![allow(clippy::doc_markdown)]

use clap::Args;

use bullmq::JobState;

use super::choices::{Sort, job_state};

/// `jobs`' selection.
#[derive(Debug, Args)]
pub(crate) struct JobsArgs {
    /// The queue.
    pub(crate) queue: String,
    /// Only jobs in this state (default: every state, each paged).
    #[arg(long, value_parser = job_state())]
    pub(crate) state: Option<JobState>,
    /// Only jobs with this name (filters the page read).
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// The page, from 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) page: u64,
    /// Jobs per page (per state).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub(crate) per_page: u64,
    /// Oldest first (asc) or newest first (desc).
    #[arg(long, value_enum, default_value_t = Sort::Desc)]
    pub(crate) sort: Sort,
    /// Only jobs whose data contains this: JSON (an object or array, contained as jsonb's @>)
    /// or else text.
    #[arg(long, value_name = "JSON|TEXT")]
    pub(crate) search: Option<String>,
    /// Resume a search where it stopped (its `next_cursor`).
    #[arg(long, requires = "search")]
    pub(crate) cursor: Option<String>,
    /// Redis: look at no more than this many jobs per search (a bounded scan).
    #[arg(long, default_value_t = 10_000, requires = "search",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) scan_limit: u64,
}

/// `add`'s inputs.
#[derive(Debug, Args)]
pub(crate) struct AddArgs {
    /// The queue.
    pub(crate) queue: String,
    /// The job's name (with --jsonl: the name of lines that have none).
    pub(crate) name: Option<String>,
    /// `-`: read the data from stdin.
    #[arg(value_name = "-")]
    pub(crate) stdin: Option<String>,
    /// The data, as JSON.
    #[arg(long, conflicts_with_all = ["file", "jsonl"])]
    pub(crate) data: Option<String>,
    /// Read the data (JSON) from this file (`-` for stdin).
    #[arg(long, value_name = "FILE", conflicts_with = "jsonl")]
    pub(crate) file: Option<String>,
    /// Job options as Node.js writes them, e.g. '{"attempts":3,"delay":1000}'.
    #[arg(long)]
    pub(crate) opts: Option<String>,
    /// Add many jobs from JSON lines, one {"name","data","opts"} object per line (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub(crate) jsonl: Option<String>,
    /// Skip this many lines of --jsonl first (to resume an interrupted run).
    #[arg(long, default_value_t = 0, requires = "jsonl")]
    pub(crate) skip: u64,
    /// Jobs per add_bulk call with --jsonl.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) batch: u32,
}

/// What every command that changes many jobs takes.
#[derive(Debug, Args)]
pub(crate) struct BulkArgs {
    /// Show how many jobs would change, and change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Do not ask before acting (needed when stdin is not a terminal).
    #[arg(short = 'y', long)]
    pub(crate) yes: bool,
    /// Jobs per server call.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) batch: u32,
    /// Sleep this long between batches, to spare a loaded server.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    pub(crate) throttle_ms: u64,
}
