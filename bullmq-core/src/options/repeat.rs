//! Repeat settings carried by the jobs a job scheduler produces.

use std::collections::BTreeMap;
use std::time::Duration;

/// `repeat` in a scheduler-produced job's options.
///
/// Users do not set this on `add` (Node.js 6 removed that); the scheduler fills it so the worker
/// that finishes an iteration can schedule the next one. Unknown keys written by other runtimes
/// are kept in `extra` and written back untouched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepeatOptions {
    /// Cron pattern (`pattern`).
    pub pattern: Option<String>,
    /// Fixed interval (`every`).
    pub every: Option<Duration>,
    /// Maximum number of iterations (`limit`).
    pub limit: Option<u64>,
    /// Run the first iteration right away (`immediately`).
    pub immediately: Option<bool>,
    /// Iterations so far (`count`).
    pub count: Option<u64>,
    /// Offset of `every` iterations (`offset`).
    pub offset: Option<Duration>,
    /// First allowed run, Unix ms (`startDate`).
    pub start_date: Option<u64>,
    /// Last allowed run, Unix ms (`endDate`).
    pub end_date: Option<u64>,
    /// IANA time zone of the pattern (`tz`).
    pub tz: Option<String>,
    /// Previous run, Unix ms (`prevMillis`).
    pub prev_millis: Option<u64>,
    /// Legacy custom key (`key`).
    pub key: Option<String>,
    /// Keys this version does not know, kept verbatim.
    pub extra: BTreeMap<String, serde_json::Value>,
}
