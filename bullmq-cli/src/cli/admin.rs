//! The inputs of the commands that watch or administer a queue or the store.

// The doc comments here are the `--help` text, where backticks would show as they are.
#![allow(clippy::doc_markdown)]

use clap::{Args, Subcommand};

/// `dashboard`'s options.
#[derive(Debug, Args)]
pub(crate) struct DashboardArgs {
    /// The address to serve on; anyone who reaches it may act on the queues unless
    /// --read-only, so keep it on a loopback address or behind an authenticating proxy.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:3000")]
    pub(crate) listen: String,
}

/// `top`'s command line.
#[derive(Debug, Args)]
pub(crate) struct TopArgs {
    /// The queues to show (default: every queue of the store, listed again at each poll).
    pub(crate) queues: Vec<String>,
    /// Read every queue again this often, besides on events.
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(100..=600_000))]
    pub(crate) interval: u64,
}

/// `scheduler`'s subcommands.
#[derive(Debug, Subcommand, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub(crate) enum SchedulerCommand {
    /// Create or replace a scheduler (cron --pattern or --every), and add its next job.
    Upsert(UpsertArgs),
    /// Remove a scheduler and its pending job.
    Remove {
        /// The queue.
        queue: String,
        /// The scheduler's id.
        id: String,
    },
}

/// `scheduler upsert`'s inputs.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("schedule").required(true).args(["pattern", "every"])))]
pub(crate) struct UpsertArgs {
    /// The queue.
    pub(crate) queue: String,
    /// The scheduler's id.
    pub(crate) id: String,
    /// A cron pattern (as Node.js's cron-parser reads it), e.g. '0 */5 * * * *'.
    #[arg(long)]
    pub(crate) pattern: Option<String>,
    /// Every this many milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) every: Option<u64>,
    /// The IANA time zone of the pattern, e.g. Europe/Paris.
    #[arg(long)]
    pub(crate) tz: Option<String>,
    /// Stop after this many jobs.
    #[arg(long)]
    pub(crate) limit: Option<u64>,
    /// The jobs' name (default: the scheduler's id).
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// The jobs' data, as JSON.
    #[arg(long)]
    pub(crate) data: Option<String>,
    /// The jobs' options as Node.js writes them, e.g. '{"attempts":3}'.
    #[arg(long)]
    pub(crate) opts: Option<String>,
}

/// `concurrency`'s inputs.
#[derive(Debug, Args)]
pub(crate) struct ConcurrencyArgs {
    /// The queue.
    pub(crate) queue: String,
    /// Set it: at most this many jobs of the queue run at once, across all workers.
    #[arg(conflicts_with = "remove", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) set: Option<u64>,
    /// Lift the limit.
    #[arg(long)]
    pub(crate) remove: bool,
}

/// `rate-limit`'s inputs.
#[derive(Debug, Args)]
pub(crate) struct RateLimitArgs {
    /// The queue.
    pub(crate) queue: String,
    /// Set it: at most this many jobs per --duration, across all workers.
    #[arg(long, requires = "duration", conflicts_with = "remove",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max: Option<u64>,
    /// The window of --max, in milliseconds.
    #[arg(long, value_name = "MS", requires = "max",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) duration: Option<u64>,
    /// Lift the limit.
    #[arg(long)]
    pub(crate) remove: bool,
}

/// `migrate`'s inputs.
#[derive(Debug, Args)]
pub(crate) struct MigrateArgs {
    /// Show the pending migrations, and apply nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Do not ask before migrating (needed when stdin is not a terminal).
    #[arg(short = 'y', long)]
    pub(crate) yes: bool,
}

/// `bench`'s inputs.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Jobs to add and process.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) jobs: u64,
    /// The worker's concurrency.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub(crate) concurrency: u64,
}
