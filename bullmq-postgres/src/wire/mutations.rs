//! The parameters of the `JobMutations` commands that Node.js's backend derives: progress as
//! `jsonb`, the logs' counts, the new delay and priority. The commands that take only the
//! queue, a job id and values as given are bound with [`JobAt::keyed`].

use std::time::Duration;

use bullmq_core::Result;

use super::{JobAt, js_jsonb, millis, to_i32, to_i64};
use crate::connection::Query;
use crate::sql::commands;

/// `update_progress(queue, id, progress jsonb)`.
pub(crate) fn update_progress<'q>(
    job: JobAt<'q>,
    progress: &serde_json::Value,
) -> Result<Query<'q>> {
    let progress = js_jsonb("job progress", progress)?;
    Ok(job.keyed(commands::UPDATE_PROGRESS).bind(progress))
}

/// `trim_logs(queue, id, how many of the oldest lines go)`.
pub(crate) fn trim_logs<'q>(job: JobAt<'q>, drop: u64) -> Query<'q> {
    job.keyed(commands::TRIM_LOGS).bind(to_i64(drop))
}

/// `clear_logs(queue, id, lines kept)`: `NULL` or 0 removes every line.
pub(crate) fn clear_logs<'q>(job: JobAt<'q>, keep_logs: Option<u32>) -> Query<'q> {
    job.keyed(commands::CLEAR_LOGS)
        .bind(keep_logs.map(i64::from))
}

/// `change_delay(queue, id, delay ms, now)`.
pub(crate) fn change_delay<'q>(job: JobAt<'q>, delay: Duration, now: i64) -> Query<'q> {
    job.keyed(commands::CHANGE_DELAY)
        .bind(millis(delay))
        .bind(now)
}

/// `change_priority(queue, id, priority, lifo)`.
pub(crate) fn change_priority<'q>(job: JobAt<'q>, priority: u32, lifo: bool) -> Query<'q> {
    job.keyed(commands::CHANGE_PRIORITY)
        .bind(to_i32(u64::from(priority)))
        .bind(lifo)
}
