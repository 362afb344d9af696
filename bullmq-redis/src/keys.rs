//! The Redis keys of one queue, as upstream names them (`<prefix>:<queue>:<type>`).

use bullmq_core::{Prefix, QueueName};

/// Every key of a queue, built once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueKeys {
    /// `<prefix>:<queue>`: the queue's qualified name.
    pub(crate) qualified_name: String,
    /// `<prefix>:<queue>:`: the prefix of every job key.
    pub(crate) job_prefix: String,
    /// `wait` list.
    pub(crate) wait: String,
    /// `paused` list (legacy; drained back into `wait` on resume).
    pub(crate) paused: String,
    /// `active` list.
    pub(crate) active: String,
    /// `prioritized` sorted set.
    pub(crate) prioritized: String,
    /// `pc`: the priority counter.
    pub(crate) priority_counter: String,
    /// `delayed` sorted set.
    pub(crate) delayed: String,
    /// `waiting-children` sorted set.
    pub(crate) waiting_children: String,
    /// `completed` sorted set.
    pub(crate) completed: String,
    /// `failed` sorted set.
    pub(crate) failed: String,
    /// `marker` sorted set that wakes workers.
    pub(crate) marker: String,
    /// `id`: the job id counter.
    pub(crate) id: String,
    /// `meta` hash.
    pub(crate) meta: String,
    /// `events` stream.
    pub(crate) events: String,
    /// `stalled` set.
    pub(crate) stalled: String,
    /// `stalled-check` throttle key.
    pub(crate) stalled_check: String,
    /// `limiter` counter.
    pub(crate) limiter: String,
    /// `repeat` sorted set of job schedulers.
    pub(crate) repeat: String,
    /// `de`: the prefix of deduplication keys.
    pub(crate) dedup: String,
    /// `metrics:completed`: the completed-jobs counter and its timestamp.
    pub(crate) metrics_completed: String,
    /// `metrics:failed`: the failed-jobs counter and its timestamp.
    pub(crate) metrics_failed: String,
}

impl QueueKeys {
    /// The keys of `queue` under `prefix`.
    #[must_use]
    pub(crate) fn new(prefix: &Prefix, queue: &QueueName) -> Self {
        let qualified_name = format!("{prefix}:{queue}");
        let key = |part: &str| format!("{qualified_name}:{part}");
        Self {
            job_prefix: key(""),
            wait: key("wait"),
            paused: key("paused"),
            active: key("active"),
            prioritized: key("prioritized"),
            priority_counter: key("pc"),
            delayed: key("delayed"),
            waiting_children: key("waiting-children"),
            completed: key("completed"),
            failed: key("failed"),
            marker: key("marker"),
            id: key("id"),
            meta: key("meta"),
            events: key("events"),
            stalled: key("stalled"),
            stalled_check: key("stalled-check"),
            limiter: key("limiter"),
            repeat: key("repeat"),
            dedup: key("de"),
            metrics_completed: key("metrics:completed"),
            metrics_failed: key("metrics:failed"),
            qualified_name,
        }
    }

    /// Any part of the queue's key space: `<prefix>:<queue>:<part>`.
    #[must_use]
    pub(crate) fn to_key(&self, part: &str) -> String {
        format!("{}{part}", self.job_prefix)
    }

    /// A job's hash key.
    #[must_use]
    pub(crate) fn job(&self, id: &str) -> String {
        self.to_key(id)
    }

    /// A job's hash key with the id's exact bytes (an id another runtime wrote may not be
    /// UTF-8); `suffix` is appended (`":lock"`, say).
    #[must_use]
    pub(crate) fn job_key(&self, id: &bullmq_core::JobId, suffix: &str) -> Vec<u8> {
        let mut key =
            Vec::with_capacity(self.job_prefix.len() + id.as_bytes().len() + suffix.len());
        key.extend_from_slice(self.job_prefix.as_bytes());
        key.extend_from_slice(id.as_bytes());
        key.extend_from_slice(suffix.as_bytes());
        key
    }

    /// A deduplication key: `<prefix>:<queue>:de:<id>`.
    #[must_use]
    pub(crate) fn deduplication(&self, id: &str) -> String {
        format!("{}:{id}", self.dedup)
    }
}
