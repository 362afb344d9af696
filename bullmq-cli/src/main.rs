//! `bullmq`: the operators' command line for BullMQ queues on Redis and PostgreSQL.
//!
//! Every command reads the store the URL names (`--url`, else `BULLMQ_URL`, `REDIS_URL`,
//! `DATABASE_URL`) through the `bullmq` library's public API, so it sees exactly what
//! applications in Rust or Node.js see. `bullmq --help` lists the commands; the guide is
//! docs/guides/cli.md.

#![forbid(unsafe_code)]

mod cli;
mod commands;
mod confirm;
mod context;
mod fail;
mod interrupt;
mod job_rows;
mod output;
mod progress;
mod store;
mod values;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        console::set_colors_enabled(false);
        console::set_colors_enabled_stderr(false);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!(
                "error: cannot start the async runtime: {e}; check the process's thread limits"
            );
            return ExitCode::from(fail::FAILED);
        }
    };
    let url = store::url_of(&cli);
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            // The library never shows passwords; this is the last guard for any text that
            // might still carry one (a cause quoting the URL).
            let message = store::scrub(&failure.message, url.as_deref());
            eprintln!("error: {message}");
            ExitCode::from(failure.code)
        }
    }
}
