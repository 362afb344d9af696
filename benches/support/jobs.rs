//! The jobs of the add and worker benchmarks, the same in the three implementations.

use serde::Serialize;

/// The queue every mode uses (under its own prefix).
pub const QUEUE: &str = "bench";
/// Every job's name.
pub const JOB_NAME: &str = "bench-job";
/// Every job's payload: 100 bytes, the same in the three harnesses.
pub const PAYLOAD: &str = "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. 0123456789abcd";
/// Jobs per `add_bulk` call.
pub const CHUNK: u64 = 1_000;

/// One job's data: `{"i": n, "payload": "..."}`.
#[derive(Serialize)]
pub struct Data {
    /// The job's number in its run.
    pub i: u64,
    /// [`PAYLOAD`].
    pub payload: &'static str,
}

impl Data {
    /// Job number `i`'s data.
    pub fn new(i: u64) -> Self {
        Self {
            i,
            payload: PAYLOAD,
        }
    }
}
