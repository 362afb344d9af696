//! Asking before a bulk change: "type yes" on a terminal; without a terminal, only `--yes`.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use crate::cli::BulkArgs;
use crate::fail::Failure;

/// Goes on when `--yes` was given or the user types `yes`; `what` says what would happen
/// ("retry 100000 failed jobs of queue \"mail\" on redis://…").
pub(crate) fn confirm(bulk: &BulkArgs, what: &str) -> Result<(), Failure> {
    if bulk.yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(Failure::usage(format!(
            "refusing to {what} without --yes: stdin is not a terminal to ask on; add --yes to \
             go on, or --dry-run to see the count"
        )));
    }
    eprint!("About to {what}. Type yes to go on: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| {
            Failure::failed(format!(
                "cannot read the answer from stdin: {e}; pass --yes instead"
            ))
        })?;
    if answer.trim() == "yes" {
        Ok(())
    } else {
        Err(Failure::failed(format!(
            "nothing done: the answer was {:?}, not \"yes\"",
            answer.trim()
        )))
    }
}
