//! Entries of `Queue::add_bulk` for tests where only the name and the options matter.

use bullmq_core::{BulkJob, JobOptions};
use serde_json::{Value, json};

/// A bulk entry named `name` with empty data and `opts`.
pub fn bulk_job(name: &str, opts: JobOptions) -> BulkJob<Value> {
    BulkJob {
        name: name.to_owned(),
        data: json!({}),
        opts,
    }
}
