//! The parameters of the `Admin` commands that Node.js's backend derives: the state name
//! `clean` receives, the counts and times as SQL integers, the rate limit's expiry.

use std::time::Duration;

use bullmq_core::JobState;
use bullmq_core::job::FinishedState;

use super::{millis, queued, to_i32, to_i64};
use crate::connection::Query;
use crate::sql::commands;

/// The state name `clean` receives: Node.js's `Queue.clean` normalises `waiting` to `wait`
/// before calling the backend (the SQL accepts both).
fn clean_type(state: JobState) -> &'static str {
    match state {
        JobState::Waiting => "wait",
        other => other.as_str(),
    }
}

/// `clean(queue, state, before ms, limit)`.
pub(crate) fn clean(queue: &str, state: JobState, before_ms: u64, limit: u32) -> Query<'_> {
    queued(commands::CLEAN, queue)
        .bind(clean_type(state))
        .bind(to_i64(before_ms))
        .bind(to_i32(u64::from(limit)))
}

/// `obliterate(queue, count, force)`.
pub(crate) fn obliterate(queue: &str, count: u32, force: bool) -> Query<'_> {
    queued(commands::OBLITERATE, queue)
        .bind(to_i32(u64::from(count)))
        .bind(force)
}

/// `retry_jobs(queue, state, count, before ms)`.
pub(crate) fn retry_jobs(
    queue: &str,
    state: FinishedState,
    count: u32,
    before_ms: u64,
) -> Query<'_> {
    queued(commands::RETRY_JOBS, queue)
        .bind(state.as_str())
        .bind(Some(to_i32(u64::from(count))))
        .bind(Some(to_i64(before_ms)))
}

/// `promote_jobs(queue, count)`.
pub(crate) fn promote_jobs(queue: &str, count: u32) -> Query<'_> {
    queued(commands::PROMOTE_JOBS, queue).bind(Some(to_i32(u64::from(count))))
}

/// `set_rate_limit(queue, expiry ms, now)`.
pub(crate) fn set_rate_limit(queue: &str, expire: Duration, now: i64) -> Query<'_> {
    queued(commands::SET_RATE_LIMIT, queue)
        .bind(millis(expire))
        .bind(now)
}
