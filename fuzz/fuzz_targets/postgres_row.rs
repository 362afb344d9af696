//! A `job` row of PostgreSQL as another runtime could have left it (`jsonb` columns as the
//! text the server prints), decoded by the backend's own `JobRow::into_job`. Properties: no
//! panic, and the data a processor sees is what `JSON.parse` makes of the stored text
//! (the same JSON value, and reading it again changes nothing).
#![no_main]

use arbitrary::Arbitrary;
use bullmq_postgres::__private::JobRow;
use libfuzzer_sys::fuzz_target;

#[path = "common/js_value.rs"]
mod js_value;

/// The columns, each from the fuzzer's bytes.
#[derive(Debug, Arbitrary)]
struct Row {
    id: String,
    name: String,
    data: Option<String>,
    opts: Option<String>,
    added_at_ms: Option<i64>,
    delay_ms: Option<i64>,
    priority: Option<i32>,
    processed_at_ms: Option<i64>,
    finished_at_ms: Option<i64>,
    return_value: Option<String>,
    failed_reason: Option<String>,
    stacktrace: Option<String>,
    counts: [Option<i32>; 3],
    processed_by: Option<String>,
    progress: Option<String>,
    parent: [Option<String>; 3],
    scheduler_id: Option<String>,
    dedup_id: Option<String>,
    deferred_failure: Option<String>,
}

fuzz_target!(|row: Row| {
    let [attempts_made, attempts_started, stalled_count] = row.counts;
    let [parent_key, parent_id, parent_queue] = row.parent;
    let data = row.data.clone();
    let job = JobRow {
        id: row.id,
        name: row.name,
        data: row.data,
        opts: row.opts,
        added_at_ms: row.added_at_ms,
        delay_ms: row.delay_ms,
        priority: row.priority,
        processed_at_ms: row.processed_at_ms,
        finished_at_ms: row.finished_at_ms,
        return_value: row.return_value,
        failed_reason: row.failed_reason,
        stacktrace: row.stacktrace,
        attempts_made,
        attempts_started,
        stalled_count,
        processed_by: row.processed_by,
        progress: row.progress,
        parent_key,
        parent_id,
        parent_queue,
        scheduler_id: row.scheduler_id,
        dedup_id: row.dedup_id,
        deferred_failure: row.deferred_failure,
    }
    .into_job();
    let (Ok(job), Some(stored)) = (job, data) else {
        return;
    };
    let Ok(stored) = serde_json::from_str::<serde_json::Value>(&stored) else {
        return;
    };
    if stored.is_null() {
        return;
    }
    let seen: serde_json::Value = serde_json::from_str(&job.data)
        .unwrap_or_else(|e| panic!("the data view {:?} must be JSON: {e}", job.data));
    assert!(
        js_value::same(&seen, &stored),
        "the data view changed the value: {seen} for {stored}"
    );
    assert_eq!(
        bullmq_core::json::js_view(&job.data),
        job.data,
        "the view is not stable"
    );
});
