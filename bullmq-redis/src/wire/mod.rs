//! The calls of upstream's Lua scripts: each script's `KEYS` and `ARGV` in upstream's order,
//! what this backend packs for Redis byte for byte as Node.js BullMQ packs it. One file per
//! `Backend` section (`transition_args.rs` holds the packed options of `transitions.rs`); the
//! backend method only runs the call and decodes the reply. The relay's scripts, which all
//! start with the namespace's keys, take their arguments in `backend/relay/` instead.
//!
//! The shapes both stores share (the job options, the job and scheduler hashes) stay in
//! `bullmq_core::codec`; the maps built here are written by its one msgpack writer
//! (`bullmq_core::codec::pack_msgpack`).

mod add;
mod admin;
mod locks;
mod mutations;
mod queries;
mod schedulers;
mod transition_args;
mod transitions;

use std::time::Duration;

pub(crate) use add::{
    AddJobArgs, add_script, pack_add_job_args, release_parent_if_no_pending_dependencies,
};
pub(crate) use admin::{
    JOB_SUB_KEY_SUFFIXES, PROMOTE_ALL_BEFORE, QUEUE_KEY_SUFFIXES, clean_jobs_in_set, drain,
    move_jobs_to_wait, obliterate, pause, remove_orphaned_jobs,
};
pub(crate) use locks::{extend_lock, extend_locks};
pub(crate) use mutations::{
    add_log, change_delay, change_priority, remove_child_dependency, remove_deduplication_key,
    remove_job, remove_unprocessed_children, update_data, update_progress,
};
pub(crate) use queries::{
    get_counts, get_counts_per_priority, get_dependency_counts, get_metrics, get_ranges,
    get_rate_limit_ttl, get_state, is_finished, is_maxed, paginate,
};
pub(crate) use schedulers::{
    add_job_scheduler, get_job_scheduler, remove_job_scheduler, update_job_scheduler,
};
pub(crate) use transition_args::FetchOpts;
pub(crate) use transitions::{
    FinishCall, move_job_from_active_to_wait, move_stalled_jobs_to_wait, move_to_active,
    move_to_delayed, move_to_finished, move_to_waiting_children, promote, reprocess_job, retry_job,
};

/// Whole milliseconds, as Node.js passes durations to the scripts.
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Node.js passes booleans to the scripts as `"1"`/`"0"`.
pub(crate) fn flag(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}
