//! The progress bar of a bulk command: drawn on stderr when it is a terminal, hidden
//! otherwise (piped, redirected, under CI).

use std::io::IsTerminal as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether bars are drawn: stderr is a terminal.
pub(crate) fn visible() -> bool {
    std::io::stderr().is_terminal()
}

/// A bar of `total` jobs, labelled `what`.
pub(crate) fn bar(total: u64, what: &str) -> ProgressBar {
    let target = if visible() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30.cyan/blue}] {pos}/{len} jobs, {elapsed} elapsed, {eta} left",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_owned());
    bar
}
