//! The command line: global options and one subcommand per operation (clap derive). Every
//! argument type lives under this module, which imports nothing of the commands: they read
//! it, never the other way round.

// The doc comments here are the `--help` text, where backticks would show as they are.
#![allow(clippy::doc_markdown)]

mod admin;
mod choices;
mod jobs;

use clap::{Parser, Subcommand};

pub(crate) use self::admin::{
    BenchArgs, ConcurrencyArgs, DashboardArgs, MigrateArgs, RateLimitArgs, SchedulerCommand,
    TopArgs, UpsertArgs,
};
pub(crate) use self::choices::{Finished, Format, Sort};
pub(crate) use self::jobs::{AddArgs, BulkArgs, JobsArgs};

/// The operators' command line for BullMQ queues on Redis and PostgreSQL.
///
/// The store is picked by URL: --url, else BULLMQ_URL, REDIS_URL, DATABASE_URL.
/// Exit codes: 0 done, 1 failed, 2 usage (or refused).
#[derive(Debug, Parser)]
#[command(name = "bullmq", version, about, long_about = None)]
pub(crate) struct Cli {
    /// The store: redis://, rediss://, redis+cluster://, redis+sentinel://, postgres://
    #[arg(long, global = true, value_name = "URL")]
    pub(crate) url: Option<String>,
    /// The Redis key prefix (default `bull`); PostgreSQL ignores it.
    #[arg(long, global = true)]
    pub(crate) prefix: Option<String>,
    /// The PostgreSQL schema (default `bullmq`); Redis ignores it.
    #[arg(long, global = true)]
    pub(crate) schema: Option<String>,
    /// Output format: text (tables), json (one document), jsonl (one object per line).
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Format::Text)]
    pub(crate) output: Format,
    /// Refuse every command that changes something (also BULLMQ_READ_ONLY=1).
    #[arg(long, global = true)]
    pub(crate) read_only: bool,
    /// Show data and return values whole (they are cut at 1 KiB otherwise).
    #[arg(long, global = true)]
    pub(crate) full: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// Every command.
#[derive(Debug, Subcommand, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub(crate) enum Command {
    /// Every queue under the prefix (Redis) or in the schema (PostgreSQL), with its counts.
    Queues,
    /// A page of a queue's jobs, by state and name.
    Jobs(JobsArgs),
    /// One job: data, options, progress, logs, stack traces, return value, parent, children.
    Job {
        /// The queue.
        queue: String,
        /// The job's id.
        id: String,
    },
    /// The workers connected to a queue.
    Workers {
        /// The queue.
        queue: String,
    },
    /// A queue's job schedulers.
    Schedulers {
        /// The queue.
        queue: String,
    },
    /// Completed and failed jobs per minute; the Prometheus text with --prometheus.
    Metrics {
        /// The queue.
        queue: String,
        /// Print the Prometheus text exposition instead.
        #[arg(long)]
        prometheus: bool,
        /// Data points (minutes) to show, newest first.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        points: u32,
    },
    /// The queue's events as they happen, one line each, until ctrl-c.
    Events {
        /// The queue.
        queue: String,
        /// Follow the event stream (the only mode of this release).
        #[arg(long, required = true)]
        follow: bool,
        /// Stop after this many events.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Add one job (data from --data, --file or stdin), or many from JSON lines (--jsonl).
    Add(AddArgs),
    /// Move failed (or completed) jobs back to waiting.
    Retry {
        /// The queue.
        queue: String,
        /// Which finished jobs to retry.
        #[arg(long, value_enum, default_value_t = Finished::Failed)]
        state: Finished,
        #[command(flatten)]
        bulk: BulkArgs,
    },
    /// Make every delayed job ready now.
    Promote {
        /// The queue.
        queue: String,
        #[command(flatten)]
        bulk: BulkArgs,
    },
    /// Remove jobs by id (with their children).
    Remove {
        /// The queue.
        queue: String,
        /// The jobs' ids.
        #[arg(required = true)]
        ids: Vec<String>,
        #[command(flatten)]
        bulk: BulkArgs,
    },
    /// Remove the jobs of one state older than a grace period.
    Clean {
        /// The queue.
        queue: String,
        /// Which jobs: completed, failed, delayed, waiting, prioritized, active, waiting-children.
        #[arg(long, value_parser = self::choices::job_state())]
        state: bullmq::JobState,
        /// Keep the jobs finished (or added) less than this many seconds ago.
        #[arg(long, value_name = "SECS")]
        grace: u64,
        /// Remove at most this many (default: all that match).
        #[arg(long)]
        limit: Option<u64>,
        #[command(flatten)]
        bulk: BulkArgs,
    },
    /// Remove every waiting job (and delayed ones with --delayed).
    Drain {
        /// The queue.
        queue: String,
        /// Also remove delayed jobs.
        #[arg(long)]
        delayed: bool,
        #[command(flatten)]
        bulk: BulkArgs,
    },
    /// Pause a queue: workers take no new jobs.
    Pause {
        /// The queue.
        queue: String,
    },
    /// Resume a paused queue.
    Resume {
        /// The queue.
        queue: String,
    },
    /// Destroy a queue and every job in it.
    Obliterate {
        /// The queue.
        queue: String,
        /// Also when jobs are active.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        bulk: BulkArgs,
    },
    /// A live view of every queue: counts, jobs/s in and out, failures, workers; keys act.
    Top(TopArgs),
    /// Check the server, the scripts' and schema's versions, permissions and clocks; say each fix.
    Doctor,
    /// Create, replace or remove a job scheduler.
    #[command(subcommand)]
    Scheduler(SchedulerCommand),
    /// A queue's global concurrency (across all workers): read it, or set it, or --remove it.
    Concurrency(ConcurrencyArgs),
    /// A queue's global rate limit: read it, or set it (--max N --duration MS), or --remove it.
    RateLimit(RateLimitArgs),
    /// PostgreSQL: show the schema's pending migrations (--dry-run), or apply them.
    Migrate(MigrateArgs),
    /// A quick throughput check: add N jobs, process them at concurrency C, print jobs/s.
    Bench(BenchArgs),
    /// Serve the web dashboard for the store's queues (full access unless --read-only).
    Dashboard(DashboardArgs),
    /// Print a shell completion script.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

impl Command {
    /// Whether running it would change the store (a dry run changes nothing).
    pub(crate) fn changes_something(&self) -> bool {
        match self {
            Self::Add(_) | Self::Pause { .. } | Self::Resume { .. } => true,
            Self::Scheduler(_) => true,
            Self::Concurrency(args) => args.set.is_some() || args.remove,
            Self::RateLimit(args) => args.max.is_some() || args.remove,
            Self::Migrate(args) => !args.dry_run,
            Self::Bench(_) => true,
            Self::Retry { bulk, .. }
            | Self::Promote { bulk, .. }
            | Self::Remove { bulk, .. }
            | Self::Clean { bulk, .. }
            | Self::Drain { bulk, .. }
            | Self::Obliterate { bulk, .. } => !bulk.dry_run,
            Self::Queues
            | Self::Jobs(_)
            | Self::Job { .. }
            | Self::Workers { .. }
            | Self::Schedulers { .. }
            | Self::Metrics { .. }
            | Self::Events { .. }
            | Self::Top(_)
            | Self::Doctor
            | Self::Dashboard(_)
            | Self::Completions { .. } => false,
        }
    }

    /// Its name, as typed: clap and this spell each variant in kebab-case.
    pub(crate) fn name(&self) -> String {
        match self {
            Self::Scheduler(command) => format!("scheduler {}", <&str>::from(command)),
            other => <&str>::from(other).to_owned(),
        }
    }
}
