//! The Redis keys of one queue, as upstream names them (`<prefix>:<queue>:<type>`).

use bullmq_core::{Prefix, QueueName};

/// Every key of a queue, built once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueKeys {
    /// `<prefix>:<queue>`: the queue's qualified name.
    pub qualified_name: String,
    /// `<prefix>:<queue>:`: the prefix of every job key.
    pub job_prefix: String,
    /// `wait` list.
    pub wait: String,
    /// `paused` list (legacy; drained back into `wait` on resume).
    pub paused: String,
    /// `active` list.
    pub active: String,
    /// `prioritized` sorted set.
    pub prioritized: String,
    /// `pc`: the priority counter.
    pub priority_counter: String,
    /// `delayed` sorted set.
    pub delayed: String,
    /// `waiting-children` sorted set.
    pub waiting_children: String,
    /// `completed` sorted set.
    pub completed: String,
    /// `failed` sorted set.
    pub failed: String,
    /// `marker` sorted set that wakes workers.
    pub marker: String,
    /// `id`: the job id counter.
    pub id: String,
    /// `meta` hash.
    pub meta: String,
    /// `events` stream.
    pub events: String,
    /// `stalled` set.
    pub stalled: String,
    /// `stalled-check` throttle key.
    pub stalled_check: String,
    /// `limiter` counter.
    pub limiter: String,
    /// `repeat` sorted set of job schedulers.
    pub repeat: String,
    /// `de`: the prefix of deduplication keys.
    pub dedup: String,
    /// `metrics:completed`: the completed-jobs counter and its timestamp.
    pub metrics_completed: String,
    /// `metrics:failed`: the failed-jobs counter and its timestamp.
    pub metrics_failed: String,
}

impl QueueKeys {
    /// The keys of `queue` under `prefix`.
    #[must_use]
    pub fn new(prefix: &Prefix, queue: &QueueName) -> Self {
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
    pub fn to_key(&self, part: &str) -> String {
        format!("{}{part}", self.job_prefix)
    }

    /// A job's hash key.
    #[must_use]
    pub fn job(&self, id: &str) -> String {
        self.to_key(id)
    }

    /// A deduplication key: `<prefix>:<queue>:de:<id>`.
    #[must_use]
    pub fn deduplication(&self, id: &str) -> String {
        format!("{}:{id}", self.dedup)
    }
}
