//! What the two binaries share, with each other and with our own harnesses: the files of
//! `benches/support/` (the command line and environment, the measurements, the jobs and
//! modes, the JSON lines), so that the official port's figures are read exactly as ours.

#[path = "../../support/mod.rs"]
mod support;

pub use support::*;
