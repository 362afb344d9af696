//! A job as `jobs`, `job` and `jobs --search` show it: one JSON shape, and a table of them.

use bullmq::options::{KeyStyle, options_to_value};
use bullmq::{Job, JobState};
use serde_json::{Value, json};

use crate::{output, values};

/// The job as the JSON shape `jobs` and `job` share (data and return value cut unless
/// `full`).
pub(crate) fn job_json(job: &Job, state: Option<JobState>, full: bool) -> Value {
    json!({
        "id": job.id.as_str(),
        "name": job.name,
        "state": state.map(JobState::as_str),
        "data": values::json_of(&job.data, full),
        "opts": options_to_value(&job.opts, KeyStyle::Long),
        "progress": job.progress,
        "timestamp": job.timestamp,
        "delay_ms": u64::try_from(job.delay.as_millis()).unwrap_or(u64::MAX),
        "priority": job.priority,
        "attempts_made": job.attempts_made,
        "attempts_started": job.attempts_started,
        "stalled_counter": job.stalled_counter,
        "processed_on": job.processed_on,
        "finished_on": job.finished_on,
        "processed_by": job.processed_by,
        "failed_reason": job.failed_reason,
        "stacktrace": job.stacktrace,
        "return_value": job.return_value.as_deref().map(|v| values::json_of(v, full)),
        "parent": job.parent.as_ref().map(|p| json!({"id": p.id, "queue_key": p.queue_key})),
        "parent_key": job.parent_key,
        "repeat_job_key": job.repeat_job_key,
        "deduplication_id": job.deduplication_id,
    })
}

/// Jobs as [`job_json`] shapes them, as a table (or `no jobs`).
pub(crate) fn table(items: &[Value], full: bool) -> String {
    if items.is_empty() {
        return "no jobs".to_owned();
    }
    let mut rows = output::table(&["ID", "NAME", "STATE", "ATTEMPTS", "CREATED", "DATA"]);
    for item in items {
        rows.add_row(vec![
            item["id"].as_str().unwrap_or_default().to_owned(),
            item["name"].as_str().unwrap_or_default().to_owned(),
            item["state"].as_str().unwrap_or_default().to_owned(),
            item["attempts_made"].to_string(),
            output::time(item["timestamp"].as_u64()),
            if full {
                item["data"].to_string()
            } else {
                values::cell(&item["data"], 60)
            },
        ]);
    }
    rows.to_string()
}
