//! Ctrl-c during a bulk command: the first one stops it after the batch in flight (so what
//! was done is done whole and reported), a second one quits at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once ctrl-c (SIGINT) has been received.
#[derive(Clone)]
pub(crate) struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Starts listening for ctrl-c; before this, ctrl-c ends the process as usual.
    pub(crate) fn listen() -> Self {
        let flag = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&flag);
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if seen.swap(true, Ordering::SeqCst) {
                    eprintln!("interrupted again: quitting now");
                    std::process::exit(130);
                }
                eprintln!(
                    "interrupted: stopping after the batch in flight (ctrl-c again to quit now)"
                );
            }
        });
        Self(flag)
    }

    /// Whether ctrl-c was received.
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
