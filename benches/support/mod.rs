//! What the Rust harnesses share: reading the command line and the environment, the
//! measurements (CPU clocks, peak RSS, Redis's CPU), key clean-up, and the jobs and modes of
//! the add, worker and pickup benchmarks with their JSON lines.
//!
//! Cargo does not take this folder for a bench target; each harness includes it with
//! `#[path = "support/mod.rs"] mod support;`. Nothing here names a bullmq crate, so that the
//! official port's harnesses (benches/official/, another cargo project) include the same
//! files through their `src/lib.rs` and print lines measured the same way.

#![allow(dead_code, unreachable_pub)]

pub mod add;
pub mod cli;
pub mod instructions;
pub mod jobs;
pub mod measure;
pub mod pickup;
pub mod worker;
