//! The parameters of `extend_lock` and `extend_locks`: the new lock ends `duration` after the
//! backend's `now`, as Node.js's backend computes it.

use std::time::Duration;

use bullmq_core::JobId;
use bullmq_core::backend::LockToken;

use super::{JobAt, millis, queued};
use crate::connection::Query;
use crate::sql::commands;

/// `extend_lock(queue, id, token, duration ms, now ms)`.
pub(crate) fn extend_lock<'q>(
    job: JobAt<'q>,
    token: &'q LockToken,
    duration: Duration,
    now: i64,
) -> Query<'q> {
    job.keyed(commands::EXTEND_LOCK)
        .bind(token.as_str())
        .bind(millis(duration))
        .bind(now)
}

/// `extend_locks(queue, ids[], tokens[], duration ms, now ms)`: the ids and tokens as two
/// parallel text arrays, in the order of `locks`.
pub(crate) fn extend_locks<'q>(
    queue: &'q str,
    locks: &'q [(JobId, LockToken)],
    duration: Duration,
    now: i64,
) -> Query<'q> {
    let ids: Vec<&str> = locks.iter().map(|(id, _)| id.as_str()).collect();
    let tokens: Vec<&str> = locks.iter().map(|(_, token)| token.as_str()).collect();
    queued(commands::EXTEND_LOCKS, queue)
        .bind(ids)
        .bind(tokens)
        .bind(millis(duration))
        .bind(now)
}
