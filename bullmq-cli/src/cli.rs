//! The command line: global options and one subcommand per operation (clap derive).

// The doc comments here are the `--help` text, where backticks would show as they are.
#![allow(clippy::doc_markdown)]

use clap::{Args, Parser, Subcommand, ValueEnum};

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

/// Every command.
#[derive(Debug, Subcommand)]
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
        #[arg(long, value_enum)]
        state: StateArg,
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
    Top(crate::commands::TopArgs),
    /// Check the server, the scripts' and schema's versions, permissions and clocks; say each fix.
    Doctor,
    /// Create, replace or remove a job scheduler.
    #[command(subcommand)]
    Scheduler(crate::commands::SchedulerCommand),
    /// A queue's global concurrency (across all workers): read it, or set it, or --remove it.
    Concurrency(crate::commands::ConcurrencyArgs),
    /// A queue's global rate limit: read it, or set it (--max N --duration MS), or --remove it.
    RateLimit(crate::commands::RateLimitArgs),
    /// PostgreSQL: show the schema's pending migrations (--dry-run), or apply them.
    Migrate(crate::commands::MigrateArgs),
    /// A quick throughput check: add N jobs, process them at concurrency C, print jobs/s.
    Bench(crate::commands::BenchArgs),
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
            Self::Concurrency(args) => args.changes_something(),
            Self::RateLimit(args) => args.changes_something(),
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

    /// Its name, as typed.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Queues => "queues",
            Self::Jobs(_) => "jobs",
            Self::Job { .. } => "job",
            Self::Workers { .. } => "workers",
            Self::Schedulers { .. } => "schedulers",
            Self::Metrics { .. } => "metrics",
            Self::Events { .. } => "events",
            Self::Add(_) => "add",
            Self::Retry { .. } => "retry",
            Self::Promote { .. } => "promote",
            Self::Remove { .. } => "remove",
            Self::Clean { .. } => "clean",
            Self::Drain { .. } => "drain",
            Self::Pause { .. } => "pause",
            Self::Resume { .. } => "resume",
            Self::Obliterate { .. } => "obliterate",
            Self::Top(_) => "top",
            Self::Doctor => "doctor",
            Self::Scheduler(command) => command.name(),
            Self::Concurrency(_) => "concurrency",
            Self::RateLimit(_) => "rate-limit",
            Self::Migrate(_) => "migrate",
            Self::Bench(_) => "bench",
            Self::Dashboard(_) => "dashboard",
            Self::Completions { .. } => "completions",
        }
    }
}

/// `dashboard`'s options.
#[derive(Debug, Args)]
pub(crate) struct DashboardArgs {
    /// The address to serve on; anyone who reaches it may act on the queues unless
    /// --read-only, so keep it on a loopback address or behind an authenticating proxy.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:3000")]
    pub(crate) listen: String,
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

/// `jobs`' selection.
#[derive(Debug, Args)]
pub(crate) struct JobsArgs {
    /// The queue.
    pub(crate) queue: String,
    /// Only jobs in this state (default: every state, each paged).
    #[arg(long, value_enum)]
    pub(crate) state: Option<StateArg>,
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
