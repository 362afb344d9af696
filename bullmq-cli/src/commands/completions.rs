//! `completions SHELL`: the shell's completion script, on stdout.

use clap::CommandFactory as _;

use crate::cli::Cli;
use crate::fail::Failure;

pub(super) fn run(shell: clap_complete::Shell) -> Result<(), Failure> {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "bullmq", &mut std::io::stdout());
    Ok(())
}
