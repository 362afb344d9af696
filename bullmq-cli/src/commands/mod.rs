//! One file per command; [`run`] checks `--read-only`, then hands the command line to it.

mod add;
mod bench;
mod bulk;
mod clean;
mod completions;
mod dashboard;
mod doctor;
mod drain;
mod events;
mod job;
mod jobs;
mod limits;
mod metrics;
mod migrate;
mod obliterate;
mod pause;
mod promote;
mod queues;
mod remove;
mod retry;
mod scheduler;
mod schedulers;
mod search;
mod top;
mod workers;

use bulk::Bulk;

use crate::cli::{Cli, Command};
use crate::context::Ctx;
use crate::fail::Failure;
use crate::store::Store;

/// Whether `BULLMQ_READ_ONLY` asks for read-only mode (`1`, `true`, `yes`).
fn read_only_env() -> bool {
    std::env::var("BULLMQ_READ_ONLY")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// Runs the command; what it prints is its result, what it returns its failure.
pub(crate) async fn run(cli: Cli) -> Result<(), Failure> {
    if let Command::Completions { shell } = &cli.command {
        return completions::run(*shell);
    }
    let read_only = cli.read_only || read_only_env();
    if read_only && cli.command.changes_something() {
        return Err(Failure::usage(format!(
            "refusing `{}`: read-only mode (--read-only or BULLMQ_READ_ONLY) forbids commands \
             that change something; run it without read-only mode, or with --dry-run to see \
             what it would do",
            cli.command.name()
        )));
    }
    let store = Store::from_cli(&cli)?;
    let served = dashboard::Served::of(&cli, read_only);
    let ctx = Ctx {
        store,
        format: cli.output,
        full: cli.full,
    };
    match cli.command {
        Command::Queues => queues::run(&ctx).await,
        Command::Jobs(args) => jobs::run(&ctx, &args).await,
        Command::Job { queue, id } => job::run(&ctx, &queue, &id).await,
        Command::Workers { queue } => workers::run(&ctx, &queue).await,
        Command::Schedulers { queue } => schedulers::run(&ctx, &queue).await,
        Command::Metrics {
            queue,
            prometheus,
            points,
        } => metrics::run(&ctx, &queue, prometheus, points).await,
        Command::Events { queue, limit, .. } => events::run(&ctx, &queue, limit).await,
        Command::Add(args) => add::run(&ctx, &args).await,
        Command::Retry { queue, state, bulk } => {
            retry::run(&Bulk::new(&ctx, &queue, &bulk), state).await
        }
        Command::Promote { queue, bulk } => promote::run(&Bulk::new(&ctx, &queue, &bulk)).await,
        Command::Remove { queue, ids, bulk } => remove::run(&ctx, &queue, &ids, &bulk).await,
        Command::Clean {
            queue,
            state,
            grace,
            limit,
            bulk,
        } => clean::run(&Bulk::new(&ctx, &queue, &bulk), state, grace, limit).await,
        Command::Drain {
            queue,
            delayed,
            bulk,
        } => drain::run(&Bulk::new(&ctx, &queue, &bulk), delayed).await,
        Command::Pause { queue } => pause::run(&ctx, &queue, true).await,
        Command::Resume { queue } => pause::run(&ctx, &queue, false).await,
        Command::Obliterate { queue, force, bulk } => {
            obliterate::run(&Bulk::new(&ctx, &queue, &bulk), force).await
        }
        Command::Doctor => doctor::run(&ctx).await,
        Command::Scheduler(command) => scheduler::run(&ctx, &command).await,
        Command::Concurrency(args) => limits::concurrency(&ctx, &args).await,
        Command::RateLimit(args) => limits::rate_limit(&ctx, &args).await,
        Command::Migrate(args) => migrate::run(&ctx, &args).await,
        Command::Bench(args) => bench::run(&ctx, &args).await,
        Command::Top(args) => top::run(&ctx, &args, read_only).await,
        Command::Dashboard(args) => dashboard::run(&ctx, &args, served).await,
        Command::Completions { shell } => completions::run(shell),
    }
}
